import * as vm from 'vm';
// The transform is plain JavaScript (jest loads it before any TypeScript runs).
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { bindIntrinsics } = require('./intrinsics-transform') as { bindIntrinsics: (code: string) => string };

describe('the jest transform that binds the built-ins to module constants', () => {
  it('is in effect for this module: Math here stays the original even when the global is replaced', () => {
    const original = globalThis.Math;
    try {
      (globalThis as { Math: unknown }).Math = { sqrt: () => -1 };
      expect(Math).toBe(original);
      expect(Math.sqrt(4)).toBe(2);
    } finally {
      globalThis.Math = original;
    }
  });

  it('keeps "use strict" first and every line in place, after a #! line too', () => {
    const code = '#!/usr/bin/env node\n"use strict";\nexports.f = function () { return this; };\nexports.g = Math.sqrt(9);\n';
    const bound = bindIntrinsics(code);
    expect(bound.split('\n').map((line) => line.length > 0)).toEqual(code.split('\n').map((line) => line.length > 0));
    expect(bound.split('\n')[0]).toBe('#!/usr/bin/env node');
    expect(bound.split('\n')[1].startsWith('"use strict";const { Math, Number,')).toBe(true);
    const exports: { f?: () => unknown; g?: number } = {};
    vm.runInNewContext(`(function (exports) {${bound.split('\n').slice(1).join('\n')}})`)(exports);
    // Strict mode: a plain call's `this` is undefined (sloppy mode would give the global object).
    const f = exports.f!;
    expect(f()).toBeUndefined();
    expect(exports.g).toBe(3);
  });

  it('binds at the very start of a module without a directive', () => {
    expect(bindIntrinsics('exports.x = 1;\n').startsWith('const { Math,')).toBe(true);
    expect(bindIntrinsics('exports.x = 1;\n').endsWith('} = globalThis;exports.x = 1;\n')).toBe(true);
  });
});
