/**
 * `hoist completion bash|zsh`: a completion script for the shell. Verbs and flags are completed
 * from the list below; BundleDeployment names by asking `hoist get -o name` at completion time.
 */
import { EXIT_OK, parse, runVerb, UsageError, type Io } from './common.ts';

export const COMPLETION_HELP = `usage: hoist completion bash|zsh

Print a shell completion script. Load it with
  source <(hoist completion bash)      # bash (needs bash-completion)
  source <(hoist completion zsh)       # zsh
Completes commands, flags and BundleDeployment names (listed with hoist get -o name).

exit codes: 0 printed; 2 usage error
`;

/** verb → its flags; verbs taking a BundleDeployment NAME complete names */
export const VERBS: Record<string, { flags: string[]; names: boolean }> = {
  run: {
    flags: [
      '--kubeconfig',
      '--namespace',
      '--install-crd',
      '--metrics-bind-address',
      '--leader-elect',
      '--workers',
      '--render-threads',
      '--shard',
      '--selector',
      '--cache-dir',
      '--cache-max-size',
      '--max-revision-size',
      '--fetch-timeout',
      '--helm-index-max-size',
      '--reconcile-timeout',
      '--registries-conf',
      '--ca-dir',
      '--health-rules',
      '--default-service-account',
      '--override-manager',
    ],
    names: false,
  },
  render: { flags: ['-f', '--dir', '--kubeconfig', '-o', '--kube-version', '--api-versions', '-n', '--namespace'], names: false },
  get: { flags: ['-o', '--output', '-l', '--selector', '--kubeconfig', '--help'], names: true },
  pause: { flags: ['--reason', '--kubeconfig', '--help'], names: true },
  resume: { flags: ['--kubeconfig', '--help'], names: true },
  rollback: { flags: ['--to', '-n', '--namespace', '--kubeconfig', '--help'], names: true },
  history: { flags: ['-o', '--output', '-n', '--namespace', '--kubeconfig', '--help'], names: true },
  reconcile: { flags: ['--wait', '--timeout', '--kubeconfig', '--help'], names: true },
  retry: { flags: ['--timeout', '--kubeconfig', '--help'], names: true },
  tree: { flags: ['--not-ready', '-o', '--output', '-n', '--namespace', '--health-rules', '--kubeconfig', '--help'], names: true },
  events: { flags: ['-o', '--output', '-n', '--namespace', '--health-rules', '--kubeconfig', '--help'], names: true },
  diff: {
    flags: [
      '-f',
      '--file',
      '--dir',
      '-n',
      '--namespace',
      '--default-service-account',
      '--override-manager',
      '--kube-version',
      '--api-versions',
      '--kubeconfig',
      '--help',
    ],
    names: false,
  },
  notify: { flags: ['--namespace', '--commit', '--kubeconfig'], names: false },
  completion: { flags: [], names: false },
  demo: { flags: ['--keep'], names: false },
};

function cases(indent: string, body: (verb: string, spec: { flags: string[]; names: boolean }) => string): string {
  return Object.entries(VERBS)
    .map(([verb, spec]) => `${indent}${verb}) ${body(verb, spec)} ;;`)
    .join('\n');
}

export function bashCompletion(): string {
  return `# bash completion for hoist (hoist completion bash)
_hoist() {
  local cur prev verb
  cur="\${COMP_WORDS[COMP_CWORD]}"
  prev="\${COMP_WORDS[COMP_CWORD-1]}"
  verb="\${COMP_WORDS[1]}"
  if [ "$COMP_CWORD" -eq 1 ]; then
    COMPREPLY=( $(compgen -W "${Object.keys(VERBS).join(' ')}" -- "$cur") )
    return
  fi
  case "$prev" in
    -f|--file|--kubeconfig|--dir|--cache-dir|--registries-conf|--ca-dir|--health-rules) COMPREPLY=( $(compgen -f -- "$cur") ); return ;;
    -o|--output) COMPREPLY=( $(compgen -W "wide name yaml json" -- "$cur") ); return ;;
  esac
  if [ "$verb" = completion ]; then
    COMPREPLY=( $(compgen -W "bash zsh" -- "$cur") )
    return
  fi
  local flags="" names=0
  case "$verb" in
${cases('    ', (_v, s) => `flags="${s.flags.join(' ')}"; names=${s.names ? 1 : 0}`)}
  esac
  if [[ "$cur" == -* || $names -eq 0 ]]; then
    COMPREPLY=( $(compgen -W "$flags" -- "$cur") )
  else
    COMPREPLY=( $(compgen -W "$(hoist get -o name 2>/dev/null)" -- "$cur") )
  fi
}
complete -F _hoist hoist
`;
}

export function zshCompletion(): string {
  return `#compdef hoist
# zsh completion for hoist (hoist completion zsh)
_hoist() {
  local -a verbs flags
  if (( CURRENT == 2 )); then
    verbs=(${Object.keys(VERBS).join(' ')})
    _describe 'command' verbs
    return
  fi
  case "$words[CURRENT-1]" in
    -f|--file|--kubeconfig|--dir|--cache-dir|--registries-conf|--ca-dir|--health-rules) _files; return ;;
    -o|--output) compadd wide name yaml json; return ;;
  esac
  local names=0
  case "$words[2]" in
    completion) compadd bash zsh; return ;;
${cases('    ', (_v, s) => `flags=(${s.flags.join(' ')}); names=${s.names ? 1 : 0}`)}
  esac
  if [[ "$PREFIX" == -* || $names -eq 0 ]]; then
    compadd -- $flags
  else
    compadd -- \${(f)"$(hoist get -o name 2>/dev/null)"}
  fi
}
if [[ "$funcstack[1]" == "_hoist" ]]; then _hoist "$@"; else compdef _hoist hoist; fi
`;
}

export async function completion(args: string[], io: Io): Promise<number> {
  return runVerb('completion', COMPLETION_HELP, io, async () => {
    const { values, positionals } = parse(args, { help: { type: 'boolean', short: 'h' } });
    if (values.help) {
      io.out(COMPLETION_HELP);
      return EXIT_OK;
    }
    const shell = positionals[0];
    if (positionals.length !== 1 || (shell !== 'bash' && shell !== 'zsh')) throw new UsageError('completion takes one shell: bash or zsh');
    io.out(shell === 'bash' ? bashCompletion() : zshCompletion());
    return EXIT_OK;
  });
}
