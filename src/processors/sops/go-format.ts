/**
 * The few Go formatting rules SOPS's values depend on, reproduced exactly: a MAC is a hash over
 * each value as Go prints it (sops.ToBytes), and timestamps are re-printed by Go's time package
 * when go-yaml v3 reads them (yaml.v3 resolve.go: four layouts; time.Time.MarshalText).
 *
 * Pure: text in, text out.
 */

/** strconv.FormatFloat(f, 'f', -1, 64): the shortest digits that round-trip, never an exponent. */
export function formatGoFloatF(f: number): string {
  if (Number.isNaN(f)) return 'NaN';
  if (f === Number.POSITIVE_INFINITY) return '+Inf';
  if (f === Number.NEGATIVE_INFINITY) return '-Inf';
  const sign = f < 0 || Object.is(f, -0) ? '-' : '';
  // JavaScript's shortest round-trip digits are Go's for precision -1 (both print the shortest
  // decimal that parses back to the same float64)
  const [mantissa = '0', exp = '0'] = Math.abs(f).toExponential().split('e');
  const digits = mantissa.replace('.', '');
  const point = Number(exp) + 1;
  if (point <= 0) return `${sign}0.${'0'.repeat(-point)}${digits}`;
  if (point >= digits.length) return `${sign}${digits}${'0'.repeat(point - digits.length)}`;
  return `${sign}${digits.slice(0, point)}.${digits.slice(point)}`;
}

/** a wall-clock time with its UTC offset, as Go's time.Time keeps it after time.Parse */
export interface GoTime {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
  nanos: number;
  /** seconds east of UTC */
  offset: number;
}

function daysIn(month: number, year: number): number {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
  return [4, 6, 9, 11].includes(month) ? 30 : 31;
}

// yaml.v3's allowedTimestampFormats, as regular expressions over Go's layout rules: "1", "2",
// "15", "4", "5" take one or two digits, ".999999999" an optional fraction (point or comma,
// any number of digits, nanoseconds from the first nine), "Z07:00" a Z or ±hh:mm.
const FIELD = '([0-9]{1,2})';
const FRACTION = '(?:[.,]([0-9]+))?';
const ZONE = '(Z|[+-][0-9]{2}:[0-9]{2})';
const TIMESTAMP_LAYOUTS: readonly RegExp[] = [
  new RegExp(`^([0-9]{4})-${FIELD}-${FIELD}T${FIELD}:${FIELD}:${FIELD}${FRACTION}${ZONE}$`),
  new RegExp(`^([0-9]{4})-${FIELD}-${FIELD}t${FIELD}:${FIELD}:${FIELD}${FRACTION}${ZONE}$`),
  new RegExp(`^([0-9]{4})-${FIELD}-${FIELD} ${FIELD}:${FIELD}:${FIELD}${FRACTION}()$`),
  new RegExp(`^([0-9]{4})-${FIELD}-${FIELD}()()()()()$`),
];

/**
 * yaml.v3's parseTimestamp: the time a plain scalar stands for, or undefined when it is none of
 * the four layouts or out of range (then go-yaml v3 reads it as something else).
 */
export function parseYamlV3Timestamp(s: string): GoTime | undefined {
  for (const layout of TIMESTAMP_LAYOUTS) {
    const m = layout.exec(s);
    if (!m) continue;
    const t = goTimeOf(m);
    if (t) return t;
  }
  return undefined;
}

function goTimeOf(m: RegExpExecArray): GoTime | undefined {
  const num = (i: number): number => (m[i] === undefined || m[i] === '' ? 0 : Number(m[i]));
  const [year, month, day, hour, minute, second] = [num(1), num(2), num(3), num(4), num(5), num(6)];
  if (month < 1 || month > 12 || day < 1 || day > daysIn(month, year) || hour > 23 || minute > 59 || second > 59) return undefined;
  const nanos = m[7] ? Number(m[7].slice(0, 9).padEnd(9, '0')) : 0;
  const zone = m[8] ?? '';
  let offset = 0;
  if (zone !== '' && zone !== 'Z') {
    const hh = Number(zone.slice(1, 3));
    const mm = Number(zone.slice(4, 6));
    // Go refuses an offset hour over 24 and minutes over 59 ("time zone offset hour/minute")
    if (hh > 24 || mm > 59) return undefined;
    offset = (zone[0] === '-' ? -1 : 1) * (hh * 3600 + mm * 60);
  }
  return { year, month, day, hour, minute, second, nanos, offset };
}

const RFC3339 = /^([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})(?:[.,]([0-9]+))?(Z|[+-][0-9]{2}:[0-9]{2})$/;

/** time.Parse(time.RFC3339, s), or undefined when Go refuses it */
export function parseRFC3339(s: string): GoTime | undefined {
  const m = RFC3339.exec(s);
  return m ? goTimeOf(m) : undefined;
}

const pad = (n: number, width = 2): string => String(n).padStart(width, '0');

function zoneText(offset: number): string {
  if (offset === 0) return 'Z';
  const abs = Math.abs(offset);
  return `${offset < 0 ? '-' : '+'}${pad(Math.floor(abs / 3600))}:${pad(Math.floor((abs % 3600) / 60))}`;
}

/** t.Format(time.RFC3339): what SOPS authenticates its MAC with (the file's lastmodified) */
export function formatRFC3339(t: GoTime): string {
  return `${pad(t.year, 4)}-${pad(t.month)}-${pad(t.day)}T${pad(t.hour)}:${pad(t.minute)}:${pad(t.second)}${zoneText(t.offset)}`;
}

/** t.MarshalText() (RFC3339Nano): how SOPS hashes a timestamp and go-yaml v3 prints one */
export function formatRFC3339Nano(t: GoTime): string {
  const fraction = t.nanos === 0 ? '' : `.${pad(t.nanos, 9).replace(/0+$/, '')}`;
  return `${pad(t.year, 4)}-${pad(t.month)}-${pad(t.day)}T${pad(t.hour)}:${pad(t.minute)}:${pad(t.second)}${fraction}${zoneText(t.offset)}`;
}
