/**
 * Text exactly as ML-Agents' Python prints it: `f"{x:0.3f}"` in the console summaries, `str()`
 * of hyperparameter values, and the indented hyperparameter listing (stats.py's _dict_to_str)
 * shown in the console and in TensorBoard's text tab.
 */

/** A configuration value as the trainers hand it over (parsed YAML, resolved defaults). */
export type HyperparameterValue =
  | string
  | number
  | boolean
  | null
  | HyperparameterValue[]
  | { [key: string]: HyperparameterValue };

export type Hyperparameters = { [key: string]: HyperparameterValue };

/**
 * Python's `format(x, '.Nf')`. JavaScript's toFixed differs in four ways: it rounds exact ties
 * up where Python rounds them to even, it writes -0 as "0.000", it switches to exponents from
 * 1e21, and it spells NaN and Infinity differently.
 */
export function formatFixed(x: number, digits: number): string {
  if (Number.isNaN(x)) return 'nan';
  if (!Number.isFinite(x)) return x > 0 ? 'inf' : '-inf';
  const sign = x < 0 || Object.is(x, -0) ? '-' : '';
  const magnitude = Math.abs(x);
  if (magnitude >= 2 ** 53) return `${sign}${BigInt(magnitude)}.${'0'.repeat(digits)}`;
  // A double lies exactly halfway between two N-digit decimals only when it is an odd multiple
  // of 2^-(N+1); then n = magnitude * 10^N - 1/2 is computed exactly with integers.
  const halves = magnitude * 2 ** (digits + 1);
  if (Number.isInteger(halves) && halves % 2 === 1) {
    let lower = (BigInt(halves) * 5n ** BigInt(digits) - 1n) / 2n;
    if (lower % 2n === 1n) lower += 1n;
    const text = lower.toString().padStart(digits + 1, '0');
    const point = text.length - digits;
    return `${sign}${text.slice(0, point)}${digits > 0 ? '.' : ''}${text.slice(point)}`;
  }
  return `${sign}${magnitude.toFixed(digits)}`;
}

/** Python's repr() of a float: shortest round-trip digits, exponent below 1e-4 and from 1e16. */
export function floatRepr(x: number): string {
  if (Number.isNaN(x)) return 'nan';
  if (!Number.isFinite(x)) return x > 0 ? 'inf' : '-inf';
  if (x === 0) return Object.is(x, -0) ? '-0.0' : '0.0';
  const [mantissa, exponentText] = x.toExponential().split('e');
  const exponent = Number(exponentText);
  const sign = x < 0 ? '-' : '';
  const digits = mantissa.replace('-', '').replace('.', '');
  if (exponent < -4 || exponent >= 16) {
    const significand = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
    const exponentDigits = String(Math.abs(exponent)).padStart(2, '0');
    return `${sign}${significand}e${exponent < 0 ? '-' : '+'}${exponentDigits}`;
  }
  if (exponent < 0) return `${sign}0.${'0'.repeat(-exponent - 1)}${digits}`;
  if (digits.length <= exponent + 1) return `${sign}${digits.padEnd(exponent + 1, '0')}.0`;
  return `${sign}${digits.slice(0, exponent + 1)}.${digits.slice(exponent + 1)}`;
}

function isMapping(value: HyperparameterValue): value is { [key: string]: HyperparameterValue } {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Python's str() of a value. A whole number prints as a Python int: JavaScript cannot tell 1.0
 * from 1, so a caller that wants upstream's "1.0" for a float setting passes the string "1.0".
 */
export function pythonStr(value: HyperparameterValue): string {
  return typeof value === 'string' ? value : pythonRepr(value);
}

/** Python's repr() of a value (strings quoted, as inside a list or dict). */
export function pythonRepr(value: HyperparameterValue): string {
  if (value === null) return 'None';
  if (typeof value === 'boolean') return value ? 'True' : 'False';
  if (typeof value === 'number') return Number.isSafeInteger(value) ? String(value) : floatRepr(value);
  if (typeof value === 'string') return stringRepr(value);
  if (Array.isArray(value)) return `[${value.map(pythonRepr).join(', ')}]`;
  const entries = Object.entries(value).map(([key, item]) => `${stringRepr(key)}: ${pythonRepr(item)}`);
  return `{${entries.join(', ')}}`;
}

function stringRepr(text: string): string {
  // Python quotes with ' unless the text holds a ' and no ".
  const quote = text.includes("'") && !text.includes('"') ? '"' : "'";
  const escaped = Array.from(text, (char) => {
    if (char === '\\' || char === quote) return `\\${char}`;
    if (char === '\n') return '\\n';
    if (char === '\r') return '\\r';
    if (char === '\t') return '\\t';
    const code = char.codePointAt(0)!;
    if (code < 0x20 || code === 0x7f) return `\\x${code.toString(16).padStart(2, '0')}`;
    return char;
  });
  return `${quote}${escaped.join('')}${quote}`;
}

/**
 * The hyperparameter listing of ML-Agents (stats.py _dict_to_str): one `key:<TAB>value` line
 * per entry, each starting with a tab plus two spaces per nesting level; a nested mapping starts
 * on the next line.
 */
export function hyperparametersText(value: HyperparameterValue, depth = 0): string {
  if (!isMapping(value)) return pythonStr(value);
  const lines = Object.entries(value).map(
    ([key, item]) => `\t${'  '.repeat(depth)}${key}:\t${hyperparametersText(item, depth + 1)}`,
  );
  return (depth > 0 ? '\n' : '') + lines.join('\n');
}
