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
import { createHelmProcessor } from './helm/helm-processor.ts';

/**
 * Where the helm binary is: set by whoever starts Hoist (src/cli), since processors may not know
 * how tools are installed. Looked up lazily, on the first helm render.
 */
let helmBinary: (() => string) | undefined;
export function configureHelm(resolve: () => string): void {
  helmBinary = resolve;
}

const PROCESSORS: ReadonlyMap<string, Processor> = new Map<string, Processor>([
  [plainProcessor.format, plainProcessor],
  [registryV1Processor.format, registryV1Processor],
  [
    'helm',
    createHelmProcessor({
      helmBinary: () => {
        if (!helmBinary) throw new Error('helm binary not configured (configureHelm was not called)');
        return helmBinary();
      },
    }),
  ],
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
