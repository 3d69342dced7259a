/**
 * Jest's transform for our TypeScript: ts-jest, then the module's JavaScript built-ins (Math,
 * Number, the typed arrays, ...) bound to module-local constants at its top.
 *
 * Why: jest runs every module inside a node:vm context, and there a read of a global variable
 * goes through the context's property interceptors, which V8 cannot cache: about 400 ns a read
 * against about 1 ns under plain node. A loop calling Math.sqrt or Math.exp per element (Adam,
 * the activations, the simulations) ran 20 to 40 times slower in the tests than in the trainer.
 * A module-local constant is read as fast as any other variable, and holds the very same object,
 * so nothing else changes.
 * Only built-ins that jest never replaces are bound (not its fake timers' Date or setTimeout).
 */
const crypto = require('crypto');
const fs = require('fs');
const tsJest = require('ts-jest').default;

const INTRINSICS = [
  'Math', 'Number', 'Object', 'Array', 'String', 'Boolean', 'Symbol', 'JSON', 'Reflect', 'Map', 'Set', 'WeakMap',
  'Float32Array', 'Float64Array', 'Int8Array', 'Int16Array', 'Int32Array', 'Uint8Array', 'Uint16Array', 'Uint32Array',
  'Uint8ClampedArray', 'BigInt64Array', 'BigUint64Array', 'ArrayBuffer', 'DataView', 'Error', 'RangeError', 'TypeError',
];
const BINDING = `const { ${INTRINSICS.join(', ')} } = globalThis;`;

/**
 * `code` with BINDING after its leading "use strict" directive (which must stay first) and any
 * `#!` line, on the same line, so that every line keeps its number for the source map.
 */
function bindIntrinsics(code) {
  const head = /^(#![^\n]*\n)?(\s*(['"])use strict\3;?)?/.exec(code)[0];
  return head + BINDING + code.slice(head.length);
}

const OWN_SOURCE = fs.readFileSync(__filename);

module.exports = {
  bindIntrinsics,
  createTransformer(options) {
    const inner = tsJest.createTransformer(options);
    return {
      canInstrument: inner.canInstrument,
      getCacheKey(sourceText, sourcePath, transformOptions) {
        // This file's own text is part of the key: editing it invalidates jest's cache.
        return crypto.createHash('sha256').update(inner.getCacheKey(sourceText, sourcePath, transformOptions)).update(OWN_SOURCE).digest('hex');
      },
      process(sourceText, sourcePath, transformOptions) {
        const result = inner.process(sourceText, sourcePath, transformOptions);
        return typeof result === 'string' ? bindIntrinsics(result) : { ...result, code: bindIntrinsics(result.code) };
      },
    };
  },
};
