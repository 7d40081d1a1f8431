#!/usr/bin/env bash
# build-tool.sh NAME: builds one control-plane program into bin/controlplane
# from Go modules (see hack/tools), printing progress while the compiler
# runs, since a cold kube-apiserver build takes minutes on 2 cores.
set -euo pipefail
name=$1
root=$(cd "$(dirname "$0")/.." && pwd)
out="$root/bin/controlplane"
mkdir -p "$out"
case "$name" in
  kube-apiserver|kube-controller-manager|kubectl)
    dir="$root/hack/tools/controlplane"; pkg="./cmd/$name"; what="k8s.io/kubernetes v1.37.1" ;;
  etcd)
    dir="$root/hack/tools/etcd"; pkg="go.etcd.io/etcd/server/v3"; what="go.etcd.io/etcd/server/v3 v3.6.6" ;;
  cert-manager)
    dir="$root/hack/tools/certmanager"; pkg="./cmd/cert-manager-lite"; what="github.com/cert-manager/cert-manager v1.21.2" ;;
  *) echo "build-tool.sh: unknown program $name" >&2; exit 2 ;;
esac
start=$(date +%s)
echo "==> building $name from $what (cold: minutes; once only, into bin/controlplane)"
( cd "$dir" && go build -trimpath -o "$out/$name.tmp" "$pkg" ) &
pid=$!
# A heartbeat instead of silence: the Go compiler prints nothing while it works.
while kill -0 "$pid" 2>/dev/null; do
  for _ in $(seq 30); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
  kill -0 "$pid" 2>/dev/null && echo "    ... still building $name ($(( $(date +%s) - start ))s)"
done
wait "$pid"
mv "$out/$name.tmp" "$out/$name"
echo "==> built $name in $(( $(date +%s) - start ))s"
