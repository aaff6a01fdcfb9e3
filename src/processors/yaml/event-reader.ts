/**
 * The fast YAML reader: builds the node tree from js-yaml's event stream (parseEvents: a flat
 * list of offsets, no AST), an order of magnitude faster than the `yaml` package on a 1 MB
 * manifest. Anything unusual (%TAG directives, tagged collections, named tag handles, escaped
 * tags, unknown aliases, long implicit keys) throws, and the caller falls back to the reference
 * reader (document-reader.ts), so the tree it returns is always the one that reader would build.
 *
 * Pure: no I/O.
 */
import { EVENT_ID, getScalarValue, parseEvents } from 'js-yaml';
import { MAX_DEPTH } from './node-tree.ts';
import type { YNode } from './node-tree.ts';
import { shortTag } from './scalars.ts';

/** Thrown by the fast reader for input it leaves to the reference reader. */
class UseReferenceReader extends Error {}

const YAML_SCALAR_STYLE_PLAIN = 1;
const YAML_BLOCK_STYLES = new Set([4, 5]);

export function eventTree(text: string): YNode[] {
  const events = parseEvents(text, { maxDepth: MAX_DEPTH + 1 });
  const roots: YNode[] = [];
  let anchors = new Map<string, YNode>();
  // open collections; a mapping collects keys and values alternately
  const stack: Array<{ node: Extract<YNode, { kind: 'seq' | 'map' }>; key: YNode | null | undefined }> = [];
  let lastPos = 0;
  const add = (node: YNode): void => {
    const top = stack[stack.length - 1];
    if (top === undefined) roots.push(node);
    else if (top.node.kind === 'seq') top.node.items.push(node);
    else if (top.key === undefined) top.key = node;
    else {
      top.node.pairs.push([top.key, node]);
      top.key = undefined;
    }
  };
  const anchor = (ev: { anchorStart: number; anchorEnd: number }, node: YNode): void => {
    if (ev.anchorStart >= 0) anchors.set(text.slice(ev.anchorStart, ev.anchorEnd), node);
  };
  for (const ev of events) {
    switch (ev.type) {
      case EVENT_ID.DOCUMENT:
        if (ev.directives.some((d) => d.kind === 'tag')) throw new UseReferenceReader('%TAG directive');
        anchors = new Map();
        break;
      case EVENT_ID.SCALAR: {
        const style = ev.style;
        let pos = ev.valueStart < 0 ? lastPos : ev.valueStart;
        // the reference reader places a block scalar at its header, the line before its content
        if (YAML_BLOCK_STYLES.has(style) && ev.valueStart > 0) pos = ev.valueStart - 1;
        lastPos = pos;
        const tag = ev.tagStart < 0 ? '' : eventTag(text.slice(ev.tagStart, ev.tagEnd));
        const node: YNode = { kind: 'scalar', pos, text: getScalarValue(text, ev), plain: style === YAML_SCALAR_STYLE_PLAIN, tag };
        // the reference reader refuses an implicit key longer than 1024 characters (as go-yaml does)
        const top = stack[stack.length - 1];
        if (top?.node.kind === 'map' && top.key === undefined && ev.valueEnd - ev.valueStart > 1000) {
          throw new UseReferenceReader('long key');
        }
        anchor(ev, node);
        add(node);
        break;
      }
      case EVENT_ID.SEQUENCE:
      case EVENT_ID.MAPPING: {
        if (ev.tagStart >= 0) throw new UseReferenceReader('tagged collection');
        lastPos = ev.start;
        const node: Extract<YNode, { kind: 'seq' | 'map' }> =
          ev.type === EVENT_ID.SEQUENCE ? { kind: 'seq', pos: ev.start, items: [] } : { kind: 'map', pos: ev.start, pairs: [] };
        anchor(ev, node);
        add(node);
        stack.push({ node, key: undefined });
        break;
      }
      case EVENT_ID.ALIAS: {
        const name = text.slice(ev.anchorStart, ev.anchorEnd);
        const target = anchors.get(name);
        if (target === undefined) throw new UseReferenceReader('unknown alias');
        lastPos = ev.anchorStart;
        add({ kind: 'alias', pos: ev.anchorStart, name, target });
        break;
      }
      case EVENT_ID.POP: {
        const top = stack.pop();
        if (top?.key !== undefined) throw new UseReferenceReader('mapping key without value');
        break;
      }
    }
  }
  return roots;
}

/** The short tag the reference reader would report for a tag as written; unusual forms are left to it. */
function eventTag(raw: string): string {
  if (raw.includes('%')) throw new UseReferenceReader('escaped tag');
  if (raw.startsWith('!<') && raw.endsWith('>')) return shortTag(raw.slice(2, -1));
  if (raw === '!' || /^!!?[^!]+$/.test(raw)) return raw;
  throw new UseReferenceReader('named tag handle');
}
