/**
 * @jest-environment ./test/export/onnxruntime-environment.js
 *
 * The LSTM's ONNX node (gates reordered to ONNX's input, output, forget, cell) run by onnxruntime
 * gives what our forward pass gives, step after step, final states included.
 */
import * as ort from 'onnxruntime-node';
import { onnx } from 'onnx-proto';
import { memoryLogger } from '../../src/common/logger';
import { SeededRandom } from '../../src/common/random';
import { selectBackend } from '../../src/networks/backend';
import { OnnxGraphBuilder } from '../../src/export/onnx-graph';
import { ONNX_IR_VERSION, ONNX_OPSET } from '../../src/export/onnx-export';
import { blockValues } from '../../src/networks/layers/layer';
import { Lstm } from '../../src/networks/layers/lstm';
import { parameterStore } from '../helpers/parameter-store';

const { FLOAT } = onnx.TensorProto.DataType;

beforeAll(async () => {
  await selectBackend('wasm', memoryLogger());
});

it('runs in onnxruntime as in our forward pass', async () => {
  const [batch, steps, inputs, memory] = [3, 4, 5, 6];
  const h = memory / 2;
  const store = parameterStore();
  const lstm = new Lstm(store.allocate, 'memory', inputs, memory);
  const { parameters } = store.source();
  const random = new SeededRandom(3);
  lstm.initialize(parameters, random);
  blockValues(parameters, lstm.biasIh).forEach((_, k, bias) => (bias[k] += 0.2 * random.gaussian()));
  const input = Float32Array.from({ length: batch * steps * inputs }, () => random.gaussian());
  const memories = Float32Array.from({ length: batch * memory }, () => 0.5 * random.gaussian());
  const ours = lstm.forward(input, memories, batch, steps, parameters, false);

  const graph = new OnnxGraphBuilder();
  const x = graph.input('x', FLOAT, [steps, batch, inputs]);
  const h0 = graph.input('h0', FLOAT, [1, batch, h]);
  const c0 = graph.input('c0', FLOAT, [1, batch, h]);
  const out = lstm.exportOnnx(graph, x, h0, c0, parameters);
  graph.output(out.output, FLOAT, [steps, 1, batch, h]);
  graph.output(out.hidden, FLOAT, [1, batch, h]);
  graph.output(out.cell, FLOAT, [1, batch, h]);
  const bytes = onnx.ModelProto.encode(
    onnx.ModelProto.create({ irVersion: ONNX_IR_VERSION, opsetImport: [{ domain: '', version: ONNX_OPSET }], graph: graph.graph('lstm') }),
  ).finish();
  const session = await ort.InferenceSession.create(bytes);

  // Sequence first for ONNX; the memories split into [h] and [c].
  const seqFirst = new Float32Array(input.length);
  for (let b = 0; b < batch; b++) for (let t = 0; t < steps; t++) seqFirst.set(input.subarray((b * steps + t) * inputs, (b * steps + t + 1) * inputs), (t * batch + b) * inputs);
  const half = (offset: number) => Float32Array.from({ length: batch * h }, (_, k) => memories[Math.floor(k / h) * memory + offset + (k % h)]);
  const result = await session.run({
    x: new ort.Tensor('float32', seqFirst, [steps, batch, inputs]),
    h0: new ort.Tensor('float32', half(0), [1, batch, h]),
    c0: new ort.Tensor('float32', half(h), [1, batch, h]),
  });
  const y = result[out.output].data as Float32Array;
  for (let b = 0; b < batch; b++) {
    for (let t = 0; t < steps; t++) {
      for (let j = 0; j < h; j++) expect(y[(t * batch + b) * h + j]).toBeCloseTo(ours.output[(b * steps + t) * h + j], 5);
    }
    for (let j = 0; j < h; j++) {
      expect((result[out.hidden].data as Float32Array)[b * h + j]).toBeCloseTo(ours.memories[b * memory + j], 5);
      expect((result[out.cell].data as Float32Array)[b * h + j]).toBeCloseTo(ours.memories[b * memory + h + j], 5);
    }
  }
});
