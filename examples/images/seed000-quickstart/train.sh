#!/bin/bash
# Seed 000's start script: train on one machine and save every pass under
# ./output (pass-00000, pass-00001, ...), logging to train.log as the
# tutorial's script does.
set -euo pipefail
cd /root/paddle/demo/quick_start
python3 /wide_and_deep/ctr_data.py --rows 20000 --out train.txt
python3 /wide_and_deep/train.py --train-data train.txt --passes 3 --output-dir ./output 2>&1 | tee train.log
