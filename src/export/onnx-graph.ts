/**
 * A small builder of ONNX graphs over onnx-proto's message types: named float initializers,
 * nodes with typed attributes, and graph inputs and outputs with a dynamic batch dimension.
 * It knows nothing of policies; onnx-export.ts says what the graph computes.
 */
import { onnx } from 'onnx-proto';

/** The name of the dynamic first dimension of every batched input and output. */
export const BATCH_DIMENSION = 'batch';

/** A dimension: a fixed size, or the dynamic batch dimension. */
export type Dimension = number | typeof BATCH_DIMENSION;

/** An attribute value, tagged with its ONNX type (a JavaScript number is no int or float by itself). */
export type AttributeValue = { readonly int: number } | { readonly float: number } | { readonly ints: readonly number[] };

export class OnnxGraphBuilder {
  private readonly nodes: onnx.INodeProto[] = [];
  private readonly initializers: onnx.ITensorProto[] = [];
  private readonly inputs: onnx.IValueInfoProto[] = [];
  private readonly outputs: onnx.IValueInfoProto[] = [];
  private readonly names = new Set<string>();

  /** Declares a graph input. */
  input(name: string, dataType: onnx.TensorProto.DataType, shape: readonly Dimension[]): string {
    this.claim(name);
    this.inputs.push(valueInfo(name, dataType, shape));
    return name;
  }

  /** Declares an existing value as a graph output. */
  output(name: string, dataType: onnx.TensorProto.DataType, shape: readonly Dimension[]): void {
    this.outputs.push(valueInfo(name, dataType, shape));
  }

  /** A float constant of the given shape, stored as an initializer. */
  floats(name: string, shape: readonly number[], values: ArrayLike<number>): string {
    this.claim(name);
    this.initializers.push(floatTensor(name, shape, values));
    return name;
  }

  /** Adds a node of one output, named `output`, and returns that name. */
  node(opType: string, inputs: readonly string[], output: string, attributes: Record<string, AttributeValue> = {}): string {
    return this.nodeWithOutputs(opType, inputs, [output], attributes)[0];
  }

  /** Adds a node of several outputs (an LSTM's), named `outputs`, and returns those names. */
  nodeWithOutputs(
    opType: string,
    inputs: readonly string[],
    outputs: readonly string[],
    attributes: Record<string, AttributeValue> = {},
  ): string[] {
    for (const output of outputs) this.claim(output);
    this.nodes.push({
      opType,
      name: `${opType}:${outputs[0]}`,
      input: [...inputs],
      output: [...outputs],
      attribute: Object.entries(attributes).map(([name, value]) => attribute(name, value)),
    });
    return [...outputs];
  }

  graph(name: string): onnx.IGraphProto {
    return { name, node: this.nodes, initializer: this.initializers, input: this.inputs, output: this.outputs };
  }

  /** Every value has one producer: a repeated name is a bug in the exporter, caught here. */
  private claim(name: string): void {
    if (this.names.has(name)) throw new Error(`The ONNX graph already has a value named ${name}.`);
    this.names.add(name);
  }
}

/** A float tensor with its values little-endian in raw_data, as ONNX specifies. */
export function floatTensor(name: string, shape: readonly number[], values: ArrayLike<number>): onnx.ITensorProto {
  const expected = shape.reduce((a, b) => a * b, 1);
  if (values.length !== expected) {
    throw new Error(`The ONNX tensor ${name} of shape [${shape.join(', ')}] needs ${expected} values, not ${values.length}.`);
  }
  const raw = new Uint8Array(4 * values.length);
  const view = new DataView(raw.buffer);
  for (let i = 0; i < values.length; i++) view.setFloat32(4 * i, values[i], true);
  return { name, dims: [...shape], dataType: onnx.TensorProto.DataType.FLOAT, rawData: raw };
}

function valueInfo(name: string, elemType: onnx.TensorProto.DataType, shape: readonly Dimension[]): onnx.IValueInfoProto {
  return {
    name,
    type: {
      tensorType: {
        elemType,
        shape: { dim: shape.map((d) => (typeof d === 'number' ? { dimValue: d } : { dimParam: d })) },
      },
    },
  };
}

function attribute(name: string, value: AttributeValue): onnx.IAttributeProto {
  const { AttributeType } = onnx.AttributeProto;
  if ('int' in value) return { name, type: AttributeType.INT, i: value.int };
  if ('float' in value) return { name, type: AttributeType.FLOAT, f: value.float };
  return { name, type: AttributeType.INTS, ints: [...value.ints] };
}
