/**
 * Jest's node environment runs each test file in its own realm, with its own typed array
 * constructors; onnxruntime-node's native binding makes its output arrays in the main realm, and
 * its Tensor class (loaded in the test's realm) refuses them ("A float32 tensor's data must be
 * type of function Float32Array()"). The tests that run onnxruntime use this environment, which
 * hands the test realm the main realm's typed arrays.
 */
const { TestEnvironment } = require('jest-environment-node');

const TYPED_ARRAYS = [
  'Float32Array',
  'Float64Array',
  'Int8Array',
  'Uint8Array',
  'Uint8ClampedArray',
  'Int16Array',
  'Uint16Array',
  'Int32Array',
  'Uint32Array',
  'BigInt64Array',
  'BigUint64Array',
];

class OnnxRuntimeEnvironment extends TestEnvironment {
  constructor(config, context) {
    super(config, context);
    for (const name of TYPED_ARRAYS) this.global[name] = globalThis[name];
  }
}

module.exports = OnnxRuntimeEnvironment;
