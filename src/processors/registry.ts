/**
 * Which processor handles which bundle format. The controller and `hoist render` build one
 * registry each and look processors up there and nowhere else. A format without a processor is a
 * terminal error, never a stub that renders nothing.
 */
import type { BundleFormat } from '../../api/v1alpha2/types.ts';
import { processError } from './errors.ts';
import { plainProcessor } from './plain.ts';
import type { Processor } from './processor.ts';
import { registryV1Processor } from './registry-v1/render.ts';
import { createHelmProcessor } from './helm/helm-processor.ts';
import { ProcessCode } from './errors.ts';
import { createKustomizeProcessor } from './kustomize/kustomize-processor.ts';

export interface ProcessorRegistry {
  /** the processor for `format`; throws a terminal HoistError (code unsupported-format) when there is none */
  processorFor(format: BundleFormat | string): Processor;
  /** formats with a processor, for messages and `hoist render --help` */
  supportedFormats(): BundleFormat[];
}

export interface ProcessorRegistryOptions {
  /**
   * Where the helm binary is: given by whoever starts Hoist (src/cli), since processors may not
   * know how tools are installed. Looked up lazily, on the first helm render.
   */
  helmBinary(): string;
  /** where the kustomize binary is, likewise; looked up on the first kustomize render */
  kustomizeBinary(): string;
}

export function createProcessorRegistry(opts: ProcessorRegistryOptions): ProcessorRegistry {
  const processors = new Map<string, Processor>([
    [plainProcessor.format, plainProcessor],
    [registryV1Processor.format, registryV1Processor],
    ['helm', createHelmProcessor({ helmBinary: opts.helmBinary })],
    ['kustomize', createKustomizeProcessor({ kustomizeBinary: opts.kustomizeBinary })],
  ]);
  const supportedFormats = (): BundleFormat[] => [...processors.keys()] as BundleFormat[];
  return {
    supportedFormats,
    processorFor(format) {
      const processor = processors.get(format);
      if (processor === undefined) {
        throw processError(
          `unsupported format "${format}": this build of Hoist renders ${supportedFormats().join(', ')}`,
          ProcessCode.UnsupportedFormat,
          `format ${format}`,
        );
      }
      return processor;
    },
  };
}
