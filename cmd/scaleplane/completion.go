package main

import (
	"fmt"
	"os"
)

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
        COMPREPLY=($(compgen -W "dev explain completion version help" -- "${cur}"))
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
    commands=(dev explain completion version help)
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
