#!/bin/bash
# Seed 001's start script. `paddlejob data split` put this trainer's share of
# the data under $JOB_PATH/$JOB_NAME/<trainer id>/; the launcher stages it as
# ./data and hands Paddle its peers. A trainer silent for 90 s is taken as
# hung (Paddle's GEO start-up barrier can lose one: docs/paddle-known-issues.md),
# and the launchers restart every pod's pserver and trainer together.
cd /wide_and_deep
exec paddlejob launch --progress-deadline=90s -- python3 train.py --train-data data/train.txt --passes 5
