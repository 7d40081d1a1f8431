#!/usr/bin/env bash
# build-tool.sh NAME: builds one program the tests run (control plane,
# cert-manager, KEDA, Prometheus) into bin/controlplane from Go modules (see
# hack/tools), printing progress while the compiler runs, since a cold
# kube-apiserver or KEDA build takes minutes on 2 cores.
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
  keda-operator)
    dir="$root/hack/tools/keda"; pkg="github.com/kedacore/keda/v2/cmd/operator"; what="github.com/kedacore/keda/v2 v2.21.0" ;;
  keda-adapter)
    dir="$root/hack/tools/keda"; pkg="./cmd/keda-adapter"; what="github.com/kedacore/keda/v2 v2.21.0 (its metrics server)" ;;
  keda-crds)
    # KEDA's CRDs, copied from the module the operator is built from. On a
    # cold machine the module is not in the cache yet (go list -m gives no
    # Dir until it is): download it first, and fail loudly on no CRDs.
    ( cd "$root/hack/tools/keda" && go mod download github.com/kedacore/keda/v2 )
    dir=$(cd "$root/hack/tools/keda" && go list -m -f '{{.Dir}}' github.com/kedacore/keda/v2)
    src="$dir/config/crd/bases"
    if [ -z "$dir" ] || ! ls "$src"/*.yaml >/dev/null 2>&1; then
      echo "build-tool.sh: no KEDA CRDs found in '$src'" >&2; exit 1
    fi
    rm -rf "$out/keda-crds.tmp"
    mkdir -p "$out/keda-crds.tmp"
    cp "$src"/*.yaml "$out/keda-crds.tmp/"
    chmod 644 "$out/keda-crds.tmp"/*.yaml
    rm -rf "$out/keda-crds"
    mv "$out/keda-crds.tmp" "$out/keda-crds"
    echo "==> copied $(ls "$out/keda-crds" | wc -l) KEDA CRDs into bin/controlplane/keda-crds"
    exit 0 ;;
  prometheus)
    # remove_all_sd leaves out every service discovery but file and static
    # (Prometheus' own build tag): the tests write their targets to a file.
    dir="$root/hack/tools/prometheus"; pkg="github.com/prometheus/prometheus/cmd/prometheus"; tags="remove_all_sd"
    what="github.com/prometheus/prometheus v0.316.0 (Prometheus 3, no web UI assets)" ;;
  *) echo "build-tool.sh: unknown program $name" >&2; exit 2 ;;
esac
start=$(date +%s)
echo "==> building $name from $what (cold: minutes; once only, into bin/controlplane)"
( cd "$dir" && go build -trimpath -tags "${tags:-}" -o "$out/$name.tmp" "$pkg" ) &
pid=$!
# A heartbeat instead of silence: the Go compiler prints nothing while it works.
while kill -0 "$pid" 2>/dev/null; do
  for _ in $(seq 30); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
  kill -0 "$pid" 2>/dev/null && echo "    ... still building $name ($(( $(date +%s) - start ))s)"
done
wait "$pid"
mv "$out/$name.tmp" "$out/$name"
echo "==> built $name in $(( $(date +%s) - start ))s"
