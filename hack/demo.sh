#!/usr/bin/env bash
# make demo: start the local cluster, train the wide & deep example in
# parameter-server mode with live progress, show the result, stop the cluster.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=bin/paddlejob
job=examples/jobs/wide-and-deep.yaml
out=/tmp/paddlejob-examples/wide-and-deep

hack/setup.sh
trap '"$bin" down' EXIT
"$bin" up
echo
echo "== training wide & deep (2 pservers, 2 trainers) on the local cluster =="
rm -rf "$out"
"$bin" run -f "$job" --replace --follow=worker-0
final=$("$bin" logs wide-and-deep worker-0 | grep '^final:' || true)
echo
echo "== result =="
if [ -n "$final" ]; then
  auc=$(sed -E 's/.*test_auc=([0-9.]+).*/\1/' <<<"$final")
  opt=$(sed -E 's/.*optimal_auc=([0-9.]+).*/\1/' <<<"$final")
  echo "final test AUC: $auc (the synthetic data's optimum is $opt)"
fi
echo "model checkpoints: $(ls -d "$out"/pass-* | tr '\n' ' ')"
