/**
 * Reads what Unity relies on in an ONNX policy: the graph's inputs and outputs (names, element
 * types, shapes) and the values of its constant outputs (version_number, memory_size, the
 * action output shapes). Used on our exports and on models exported by Unity's own trainer, so
 * that both are read the same way.
 */
import { onnx } from 'onnx-proto';

export interface TensorContract {
  readonly name: string;
  /** ONNX's element type name, lower case: 'float', 'int64', ... */
  readonly dataType: string;
  /** Each dimension's size; null for a dynamic (named) dimension such as the batch. */
  readonly shape: ReadonlyArray<number | null>;
}

export interface ModelContract {
  readonly irVersion: number;
  /** The version of the default ('ai.onnx') operator set. */
  readonly opsetVersion: number;
  readonly inputs: readonly TensorContract[];
  readonly outputs: readonly TensorContract[];
  /** The values of the outputs that are constants (directly or through Identity nodes), flat. */
  readonly constants: Readonly<Record<string, number[]>>;
}

/** The contract of the ONNX model in `bytes`; `source` names it in errors. */
export function readModelContract(bytes: Uint8Array, source = 'the model'): ModelContract {
  let model: onnx.ModelProto;
  try {
    model = onnx.ModelProto.decode(bytes);
  } catch (error) {
    throw new Error(`${source} is not an ONNX model: ${(error as Error).message}`);
  }
  // decode() builds message instances, whose repeated fields are arrays, never missing.
  const graph = model.graph as onnx.GraphProto | null;
  if (graph === null || graph === undefined) throw new Error(`${source} is an ONNX model without a graph.`);
  const defaultOpset = model.opsetImport.find((opset) => !opset.domain || opset.domain === 'ai.onnx');
  if (defaultOpset === undefined) throw new Error(`${source} imports no version of the default ONNX operator set.`);

  const initializerNames = new Set(graph.initializer.map((tensor) => tensor.name));
  const constants: Record<string, number[]> = {};
  for (const output of graph.output) {
    const tensor = constantBehind(graph, output.name ?? '');
    if (tensor !== null) constants[output.name ?? ''] = tensorValues(tensor, source);
  }
  return {
    irVersion: Number(model.irVersion),
    opsetVersion: Number(defaultOpset.version),
    // Files of IR version 3 and older also list the initializers among the inputs.
    inputs: graph.input.filter((input) => !initializerNames.has(input.name)).map((input) => tensorContract(input, source)),
    outputs: graph.output.map((output) => tensorContract(output, source)),
    constants,
  };
}

function tensorContract(value: onnx.IValueInfoProto, source: string): TensorContract {
  const tensorType = value.type?.tensorType;
  if (!tensorType) throw new Error(`${source}: graph value ${value.name} is not a tensor.`);
  return {
    name: value.name ?? '',
    dataType: dataTypeName(tensorType.elemType ?? 0),
    shape: (tensorType.shape?.dim ?? []).map((dim) => (dim.dimParam ? null : Number(dim.dimValue))),
  };
}

function dataTypeName(elemType: number): string {
  const name = onnx.TensorProto.DataType[elemType] as string | undefined;
  return name === undefined ? `type ${elemType}` : name.toLowerCase();
}

/** The initializer or Constant node value that `name` is, following Identity nodes; else null. */
function constantBehind(graph: onnx.GraphProto, name: string): onnx.ITensorProto | null {
  const initializer = graph.initializer.find((tensor) => tensor.name === name);
  if (initializer !== undefined) return initializer;
  const producer = graph.node.find((node) => node.output?.includes(name));
  if (producer === undefined) return null;
  if (producer.opType === 'Identity') return constantBehind(graph, producer.input?.[0] ?? '');
  if (producer.opType === 'Constant') return producer.attribute?.find((a) => a.name === 'value')?.t ?? null;
  return null;
}

/** A float or integer tensor's values, from raw_data or the typed fields. */
function tensorValues(tensor: onnx.ITensorProto, source: string): number[] {
  const { FLOAT, INT32, INT64 } = onnx.TensorProto.DataType;
  const raw = tensor.rawData && tensor.rawData.length > 0 ? tensor.rawData : null;
  const view = raw === null ? null : new DataView(raw.buffer, raw.byteOffset, raw.byteLength);
  switch (tensor.dataType) {
    case FLOAT:
      return view === null
        ? [...(tensor.floatData ?? [])]
        : Array.from({ length: view.byteLength / 4 }, (_, i) => view.getFloat32(4 * i, true));
    case INT32:
      return view === null
        ? [...(tensor.int32Data ?? [])]
        : Array.from({ length: view.byteLength / 4 }, (_, i) => view.getInt32(4 * i, true));
    case INT64:
      return view === null
        ? (tensor.int64Data ?? []).map(Number)
        : Array.from({ length: view.byteLength / 8 }, (_, i) => Number(view.getBigInt64(8 * i, true)));
    default:
      throw new Error(
        `${source}: constant ${tensor.name} has element type ${dataTypeName(tensor.dataType ?? 0)}, ` +
          'which this reader does not decode.',
      );
  }
}
