/**
 * containers' `registries.conf` (v2 TOML, containers-registries.conf(5)), the file operators
 * already keep for podman, CRI-O and OLM v1: which registries are blocked, which speak plain
 * http, and which mirrors serve them.
 *
 * Read here: `[[registry]]` with `prefix` (default: `location`), `location`, `insecure`,
 * `blocked`, and `[[registry.mirror]]` with `location`, `insecure`. The most specific prefix
 * wins; a prefix matches whole path components (`quay.io/acme` matches `quay.io/acme/op`, not
 * `quay.io/acmex`). Other keys (`unqualified-search-registries`, `short-name-mode`, aliases) do
 * not apply to Hoist's fully-qualified references and are ignored.
 *
 * Mirrors are used for digest references only — as if every registry set
 * `mirror-by-digest-only = true`, whatever `pull-from-mirror` says: a digest lets the puller
 * verify that a mirror served the right content, a tag does not. Wildcard prefixes
 * (`*.example.com`) are refused rather than half-supported.
 *
 * Pure: parsing and planning, no I/O.
 */
import { parse } from 'smol-toml';
import { HoistError, FailureReason } from '../../util/errors.ts';
import { formatReference, parseReference, type ImageReference } from './reference.ts';
import { SourceCode, sourceError } from '../errors.ts';

export interface RegistryLocation {
  location: string;
  insecure: boolean;
}

export interface RegistryEntry extends RegistryLocation {
  prefix: string;
  blocked: boolean;
  mirrors: RegistryLocation[];
}

export interface RegistriesConf {
  registries: RegistryEntry[];
}

/** One place to try for a reference, in order: mirrors first (digest references), then the location. */
export interface PullLocation {
  ref: ImageReference;
  insecure: boolean;
  mirror: boolean;
}

function confError(source: string, why: string): HoistError {
  return sourceError(`invalid registries.conf ${source}: ${why}`, {
    stage: 'spec',
    reason: FailureReason.InvalidConfig,
    code: SourceCode.InvalidRegistriesConf,
    subject: source,
    terminal: true,
  });
}

function str(v: unknown, what: string, source: string): string {
  if (typeof v !== 'string' || v.trim() === '') throw confError(source, `${what} must be a non-empty string`);
  return v.trim().replace(/\/+$/, '');
}

function bool(v: unknown, what: string, source: string): boolean {
  if (v === undefined) return false;
  if (typeof v !== 'boolean') throw confError(source, `${what} must be true or false`);
  return v;
}

/** Parses the TOML text; `source` (the file name) is what errors name. */
export function parseRegistriesConf(text: string, source = 'registries.conf'): RegistriesConf {
  let doc: Record<string, unknown>;
  try {
    doc = parse(text) as Record<string, unknown>;
  } catch (e) {
    throw confError(source, (e instanceof Error ? e.message : String(e)).split('\n')[0]!);
  }
  const raw = doc.registry ?? [];
  if (!Array.isArray(raw)) throw confError(source, '[[registry]] must be an array of tables');
  const registries = raw.map((r: Record<string, unknown>, i): RegistryEntry => {
    const at = `registry[${i}]`;
    const location = r.location === undefined ? undefined : str(r.location, `${at}.location`, source);
    const prefix = r.prefix === undefined ? location : str(r.prefix, `${at}.prefix`, source);
    if (prefix === undefined) throw confError(source, `${at} needs a location or a prefix`);
    if (prefix.includes('*')) throw confError(source, `${at}: wildcard prefix ${JSON.stringify(prefix)} is not supported`);
    const mirrorsRaw = r.mirror ?? [];
    if (!Array.isArray(mirrorsRaw)) throw confError(source, `${at}.mirror must be an array of tables`);
    return {
      prefix,
      location: location ?? prefix,
      insecure: bool(r.insecure, `${at}.insecure`, source),
      blocked: bool(r.blocked, `${at}.blocked`, source),
      mirrors: mirrorsRaw.map((m: Record<string, unknown>, j) => ({
        location: str(m.location, `${at}.mirror[${j}].location`, source),
        insecure: bool(m.insecure, `${at}.mirror[${j}].insecure`, source),
      })),
    };
  });
  const seen = new Set<string>();
  for (const r of registries) {
    if (seen.has(r.prefix)) throw confError(source, `prefix ${JSON.stringify(r.prefix)} is configured twice`);
    seen.add(r.prefix);
  }
  return { registries };
}

/** The entry whose prefix matches `registry/repository` at whole components, longest first. */
function matchRegistry(conf: RegistriesConf, ref: ImageReference): RegistryEntry | undefined {
  const name = `${ref.registry}/${ref.repository}`;
  let best: RegistryEntry | undefined;
  for (const r of conf.registries) {
    const p = r.prefix.toLowerCase();
    if ((name === p || name.startsWith(`${p}/`)) && (!best || p.length > best.prefix.length)) best = r;
  }
  return best;
}

/** `ref` with the matched prefix replaced by `location` (digest and tag kept). */
function rewrite(ref: ImageReference, prefix: string, location: string): ImageReference {
  const rest = `${ref.registry}/${ref.repository}`.slice(prefix.length);
  let s = `${location}${rest}`;
  if (ref.tag) s += `:${ref.tag}`;
  if (ref.digest) s += `@${ref.digest}`;
  return parseReference(s);
}

/**
 * Where to pull `ref` from, in order. Throws a terminal error when the registry is blocked.
 * Without a matching entry: the reference itself, secure.
 */
export function pullLocations(conf: RegistriesConf | undefined, ref: ImageReference, stage: 'resolve' | 'fetch'): PullLocation[] {
  const entry = conf ? matchRegistry(conf, ref) : undefined;
  if (!entry) return [{ ref, insecure: false, mirror: false }];
  if (entry.blocked) {
    throw sourceError(`registry ${entry.prefix} is blocked by the controller's registries.conf`, {
      stage,
      code: SourceCode.RegistryBlocked,
      subject: formatReference(ref),
      terminal: true,
    });
  }
  const prefix = entry.prefix.toLowerCase();
  const mirrors = ref.digest ? entry.mirrors.map((m) => ({ ref: rewrite(ref, prefix, m.location), insecure: m.insecure, mirror: true })) : [];
  return [...mirrors, { ref: rewrite(ref, prefix, entry.location), insecure: entry.insecure, mirror: false }];
}

/** `host[:port]` of every location configured as insecure (plain http). */
export function insecureHostsOf(conf: RegistriesConf): string[] {
  const hosts = new Set<string>();
  const hostOf = (location: string): string => location.split('/')[0]!.toLowerCase();
  for (const r of conf.registries) {
    if (r.insecure) hosts.add(hostOf(r.location));
    for (const m of r.mirrors) if (m.insecure) hosts.add(hostOf(m.location));
  }
  return [...hosts];
}
