/**
 * Which processor handles which bundle format. The reconciler and `hoist render` look processors
 * up here and nowhere else. A format without a processor is a terminal error, never a stub that
 * renders nothing.
 */
import type { BundleFormat } from '../../api/v1alpha2/types.ts';
import { processError } from './errors.ts';
import { plainProcessor } from './plain.ts';
import type { Processor } from './processor.ts';
import { registryV1Processor } from './registry-v1/render.ts';

const PROCESSORS: ReadonlyMap<string, Processor> = new Map<string, Processor>([
  [plainProcessor.format, plainProcessor],
  [registryV1Processor.format, registryV1Processor],
]);

/** Formats with a processor, for messages and `hoist render --help`. */
export function supportedFormats(): BundleFormat[] {
  return [...PROCESSORS.keys()] as BundleFormat[];
}

/** The processor for `format`; throws a terminal HoistError (code unsupported-format) when there is none. */
export function processorFor(format: BundleFormat | string): Processor {
  const processor = PROCESSORS.get(format);
  if (processor === undefined) {
    throw processError(
      `unsupported format "${format}": this build of Hoist renders ${supportedFormats().join(', ')}`,
      'unsupported-format',
      `format ${format}`,
    );
  }
  return processor;
}
