/**
 * How the helm processor fails. Every failure is a HoistError of stage 'process' and reason
 * ProcessFailed; a bad chart, bad values or a missing dependency cannot be fixed by retrying, so
 * those are terminal. Only a helm process that could not run to completion (killed by the
 * timeout, could not be started) is transient.
 *
 * helm's stderr is turned into a message without its "Error: " prefix and its "--debug" hint,
 * and the template file (with line) helm names becomes part of the subject, so a condition reads
 * "process helm chart mychart-0.1.0 mychart/templates/x.yaml:3: parse error: ...".
 */
import { HoistError } from '../../util/errors.ts';
import { ProcessCode, processError } from '../errors.ts';

/** Where helm says a failure happened: a template path relative to the charts' parent, with line. */
export interface HelmFailureLocation {
  file: string;
  line?: number;
}

export interface ParsedHelmFailure {
  code: ProcessCode;
  message: string;
  location?: HelmFailureLocation;
}

/** Patterns for the ways helm names a template in its errors (engine.go, releaseutil). */
const LOCATED: ReadonlyArray<{ re: RegExp; code: ProcessCode }> = [
  // parse error at (mychart/templates/x.yaml:3): function "nosuchfn" not defined
  { re: /^parse error at \(([^():]+):(\d+)\)/, code: ProcessCode.TemplateError },
  // execution error at (mychart/templates/x.yaml:1:3): message given to `fail`
  { re: /^execution error at \(([^():]+):(\d+):\d+\)/, code: ProcessCode.TemplateError },
  // template: mychart/templates/x.yaml:1:13: executing "mychart/templates/x.yaml" at <.Values.x.y>: nil pointer ...
  { re: /^template: ([^:]+):(\d+)(?::\d+)?:/, code: ProcessCode.TemplateError },
  // YAML parse error on mychart/templates/x.yaml: error converting YAML to JSON: yaml: line 5: ...
  { re: /^YAML parse error on ([^:]+):/, code: ProcessCode.TemplateError },
];

/** Turns helm's stderr into a code, a one-paragraph message and the template it names. Pure. */
export function parseHelmStderr(stderr: string): ParsedHelmFailure {
  const lines = stderr
    .split('\n')
    .map((l) => l.trimEnd())
    .filter((l) => l !== '' && !l.startsWith('Use --debug flag'));
  // helm prints warnings (e.g. "walk.go:75: found symbolic link") before the fatal "Error: "
  const errorAt = lines.findIndex((l) => l.startsWith('Error: '));
  const relevant = errorAt >= 0 ? lines.slice(errorAt) : lines;
  const first = (relevant[0] ?? '').replace(/^Error: /, '');
  const rest = relevant.slice(1);
  // "INSTALLATION FAILED:" style prefixes say nothing about the cause
  const head = first.replace(/^[A-Z ]+FAILED: /, '');
  const message = [head, ...rest].join('\n').trim() || 'helm failed without a message';
  if (/^values don't meet the specifications of the schema/.test(head)) {
    return { code: ProcessCode.ValuesSchema, message };
  }
  // release "Bad_Name": invalid release name, must match regex ...
  if (/^release name "/.test(head)) return { code: ProcessCode.InvalidConfig, message };
  for (const { re, code } of LOCATED) {
    const m = re.exec(head);
    if (m) {
      const file = m[1] as string;
      const line = m[2] === undefined ? undefined : Number(m[2]);
      return { code, message, location: line === undefined ? { file } : { file, line } };
    }
  }
  return { code: ProcessCode.HelmFailed, message };
}

/** The HoistError for a helm run that exited non-zero. `chart` is "name-version". */
export function helmFailure(stderr: string, chart: string): HoistError {
  const parsed = parseHelmStderr(stderr);
  const where = parsed.location ? ` ${parsed.location.file}${parsed.location.line === undefined ? '' : `:${parsed.location.line}`}` : '';
  return processError(parsed.message, parsed.code, `helm chart ${chart}${where}`);
}
