/** A parameter vector with an allocator over it, as a network gives its layers. */
import { ParameterAllocator, ParameterBlock, ParameterSource, sequentialAllocator } from '../../src/networks/layers/layer';

export interface ParameterStore {
  readonly allocate: ParameterAllocator;
  /** The blocks handed out, in order. */
  readonly blocks: ParameterBlock[];
  /** The parameters and gradient, allocated at the first call (after every block was handed out). */
  readonly source: () => ParameterSource;
}

export function parameterStore(): ParameterStore {
  const { allocate, blocks, size } = sequentialAllocator();
  let source: ParameterSource | null = null;
  return {
    blocks,
    allocate,
    source: () => (source ??= { parameters: new Float32Array(size()), gradient: new Float32Array(size()), version: 0 }),
  };
}
