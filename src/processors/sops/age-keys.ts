/**
 * age, through the one module that imports it: `age-encryption` (typage, Filippo Valsorda's
 * TypeScript implementation of age, the format SOPS encrypts its data key with). Parses the
 * identities of a key file as SOPS does (age/keysource.go parseIdentities: one per line, blank
 * lines and `#` comments skipped, AGE-SECRET-KEY-1… and the post-quantum AGE-SECRET-KEY-PQ-1…;
 * plugin identities refused) and unwraps a SOPS data key with them.
 *
 * Identities are secret: nothing here puts one, or a line of a key file, into a message; keys
 * are named by their entry, their line and their public recipient (age1…).
 */
import { armor, Decrypter, identityToRecipient } from 'age-encryption';

/** one age identity, where it came from, and its public recipient (what messages name it by) */
export interface AgeIdentity {
  /** "secret ns/name key age.agekey line 2" */
  from: string;
  identity: string;
  /** age1… (or age1pq1…): public, safe to show */
  recipient: string;
}

/** the identities a render decrypts with, and where they were read (for messages) */
export interface DecryptionKeys {
  /** "secret ns/name" */
  from: string;
  identities: readonly AgeIdentity[];
}

/** at most this many identities are read from one Secret */
export const MAX_IDENTITIES = 64;

/**
 * The identities of one key file. Throws an Error naming the line (never its text) when a line
 * is not an identity sops would accept.
 */
export async function parseAgeKeyFile(text: string, from: string): Promise<AgeIdentity[]> {
  const out: AgeIdentity[] = [];
  const lines = text.split('\n');
  for (const [i, raw] of lines.entries()) {
    // bufio.ScanLines drops a trailing \r
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (line === '' || line.startsWith('#')) continue;
    const where = `${from} line ${i + 1}`;
    if (line.startsWith('AGE-PLUGIN-')) throw new Error(`${where} is an age plugin identity: plugins are not run by Hoist`);
    if (!line.startsWith('AGE-SECRET-KEY-1') && !line.startsWith('AGE-SECRET-KEY-PQ-1'))
      throw new Error(`${where} is not an age identity (AGE-SECRET-KEY-1… or AGE-SECRET-KEY-PQ-1…)`);
    let recipient: string;
    try {
      recipient = await identityToRecipient(line);
    } catch {
      throw new Error(`${where} is not a valid age identity`);
    }
    out.push({ from: where, identity: line, recipient });
  }
  return out;
}

/**
 * The SOPS data key in `armored` (an age file in ASCII armor, a `sops.age[].enc` entry), or
 * undefined when none of the identities is a recipient of it. Throws an Error when the entry is
 * not an age file or fails to decrypt for a matching identity (corrupt or tampered).
 */
export async function unwrapDataKey(armored: string, identities: readonly AgeIdentity[]): Promise<Uint8Array | undefined> {
  let file: Uint8Array;
  try {
    file = armor.decode(armored);
  } catch {
    throw new Error('an age entry is not an ASCII-armored age file');
  }
  const d = new Decrypter();
  for (const id of identities) d.addIdentity(id.identity);
  try {
    return await d.decrypt(file);
  } catch (e) {
    const msg = e instanceof Error ? e.message : String(e);
    // typage: "no identity matched any of the file's recipients"
    if (/no identity matched/i.test(msg)) return undefined;
    throw new Error(`an age entry does not decrypt: ${msg.toLowerCase()}`);
  }
}
