package main

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
)

var unstructuredString = unstructured.NestedString

// completionMain prints a completion script for bash or zsh. The scripts
// complete the commands and flags, and the workloads of `explain` from
// `kubectl get scalings -A` (NAMESPACE/KIND/NAME, which explain takes:
// RESOURCE may be the kind in lower case).
func completionMain(args []string) int {
	if len(args) != 1 {
		fmt.Fprintln(os.Stderr, "Usage: scaleplane completion bash|zsh\n\n  source <(scaleplane completion bash)        # bash, this shell\n  scaleplane completion zsh > \"${fpath[1]}/_scaleplane\"   # zsh")
		return 2
	}
	switch args[0] {
	case "bash":
		fmt.Print(bashCompletion)
	case "zsh":
		fmt.Print(zshCompletion)
	default:
		fmt.Fprintf(os.Stderr, "scaleplane completion: shell %q: use bash or zsh\n", args[0])
		return 2
	}
	return 0
}

// The workload list is kubectl's: the Scalings the user may read, through
// the same kubeconfig.
const listTargets = `kubectl get scalings.scaleplane.io -A -o jsonpath='{range .items[*]}{.metadata.namespace}/{.spec.targetRef.kind}/{.spec.targetRef.name}{"\n"}{end}' 2>/dev/null | tr '[:upper:]' '[:lower:]'`

const bashCompletion = `# bash completion for scaleplane and kubectl-scaleplane
_scaleplane() {
    local cur prev words cword
    cur="${COMP_WORDS[COMP_CWORD]}"
    local cmd="${COMP_WORDS[1]}"
    if [[ ${COMP_CWORD} -eq 1 ]]; then
        COMPREPLY=($(compgen -W "dev explain profile config render convert cleanup completion version help" -- "${cur}"))
        return
    fi
    case "${cmd}" in
    explain)
        if [[ "${cur}" == -* ]]; then
            COMPREPLY=($(compgen -W "--kubeconfig --scaleplane-namespace --json --timeout" -- "${cur}"))
        else
            COMPREPLY=($(compgen -W "$(` + listTargets + `)" -- "${cur}"))
        fi ;;
    completion)
        COMPREPLY=($(compgen -W "bash zsh" -- "${cur}")) ;;
    version)
        COMPREPLY=($(compgen -W "-o" -- "${cur}")) ;;
    esac
}
complete -F _scaleplane scaleplane
complete -F _scaleplane kubectl-scaleplane
`

const zshCompletion = `#compdef scaleplane kubectl-scaleplane
# zsh completion for scaleplane and kubectl-scaleplane
_scaleplane() {
    local -a commands
    commands=(dev explain profile config render convert cleanup completion version help)
    if (( CURRENT == 2 )); then
        _describe 'command' commands
        return
    fi
    case "${words[2]}" in
    explain)
        if [[ "${words[CURRENT]}" == -* ]]; then
            compadd -- --kubeconfig --scaleplane-namespace --json --timeout
        else
            compadd -- ${(f)"$(` + listTargets + `)"}
        fi ;;
    completion)
        compadd -- bash zsh ;;
    esac
}
compdef _scaleplane scaleplane kubectl-scaleplane
`

// pluginCompletionMain is kubectl's completion helper for the plugin
// (installed as kubectl_complete-scaleplane): args are the words after
// "kubectl scaleplane", the last one being completed. It prints one
// candidate per line and then cobra's directive line (":4", no file
// completion), which is what kubectl expects of a plugin's helper.
func pluginCompletionMain(args []string) int {
	for _, c := range completeArgs(args, listScalingTargets) {
		fmt.Println(c)
	}
	fmt.Println(":4")
	return 0
}

// completeArgs completes the last of args: a command first, then the
// workload of explain from list (NAMESPACE/kind/NAME).
func completeArgs(args []string, list func() []string) []string {
	if len(args) == 0 {
		args = []string{""}
	}
	cur := args[len(args)-1]
	var candidates []string
	switch {
	case len(args) == 1:
		candidates = []string{"explain", "completion", "version", "help"}
	case args[0] == "explain" && strings.HasPrefix(cur, "-"):
		candidates = []string{"--kubeconfig", "--scaleplane-namespace", "--json", "--timeout"}
	case args[0] == "explain" && len(args) == 2:
		candidates = list()
	case args[0] == "completion" && len(args) == 2:
		candidates = []string{"bash", "zsh"}
	}
	var out []string
	for _, c := range candidates {
		if strings.HasPrefix(c, cur) {
			out = append(out, c)
		}
	}
	return out
}

// listScalingTargets lists the workloads of the Scalings the kubeconfig's
// user may read, as explain takes them; nothing on any error (completion
// must never print one).
func listScalingTargets() []string {
	cfg, err := restConfig("")
	if err != nil {
		return nil
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	l, err := dyn.Resource(scalingsResource).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil
	}
	var out []string
	for _, s := range l.Items {
		ref, _, _ := unstructuredString(s.Object, "spec", "targetRef", "kind")
		name, _, _ := unstructuredString(s.Object, "spec", "targetRef", "name")
		out = append(out, s.GetNamespace()+"/"+strings.ToLower(ref)+"/"+name)
	}
	sort.Strings(out)
	return out
}
