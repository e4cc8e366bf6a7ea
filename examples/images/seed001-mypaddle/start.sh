#!/bin/bash
# Seed 001's start script. `paddlejob data split` put this trainer's share of
# the data under $JOB_PATH/$JOB_NAME/<trainer id>/; the launcher stages it as
# ./data and hands Paddle its peers.
cd /wide_and_deep
exec paddlejob launch -- python3 train.py --train-data data/train.txt --passes 5
