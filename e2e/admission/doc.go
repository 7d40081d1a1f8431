// Package admission is the end-to-end proof of scaleplane's admission
// webhooks (contract rules M1–M6, V1–V11, W1–W2, S1) against a real etcd,
// kube-apiserver and kubectl: the three sample kinds and a foreign kind
// defined only in testdata, each driven the way a user drives them, with
// kubectl apply, patch and scale.
package admission
