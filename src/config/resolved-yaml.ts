/**
 * results/<run-id>/configuration.yaml as ML-Agents writes it: RunOptions.as_dict() through PyYAML's
 * `yaml.dump(..., sort_keys=False)` (block style, two-space indent, sequences not indented under
 * their key, Python's float repr, single-quoted strings only where a plain one would misread).
 */
import { stringify } from 'yaml';
import { floatRepr } from '../stats/python-format';
import { isMapping } from './reader';
import { RUN_OPTIONS_KEYS, RunOptions } from './settings';

/**
 * Keys whose numbers are Python floats in upstream's settings, printed with a decimal point
 * (`strength: 1.0`); every other number is an int. No int field shares one of these names.
 */
const FLOAT_KEYS = new Set([
  'learning_rate',
  'beta',
  'epsilon',
  'lambd',
  'tau',
  'steps_per_update',
  'init_entcoef',
  'reward_signal_steps_per_update',
  'gamma',
  'strength',
  'play_against_latest_model_ratio',
  'initial_elo',
  'time_scale',
  'threshold',
  'value',
  'min_value',
  'max_value',
  'mean',
  'st_dev',
  'intervals',
]);

/**
 * Float fields whose upstream default is a Python int, so that ML-Agents writes the default
 * without a decimal point (`time_scale: 20`).
 */
const INT_DEFAULTS: Readonly<Record<string, number>> = {
  time_scale: 20,
  steps_per_update: 1,
  reward_signal_steps_per_update: 1,
};

/** The text of results/<run-id>/configuration.yaml for these options (our extras left out). */
export function toResolvedYaml(options: RunOptions): string {
  const upstream = Object.fromEntries(RUN_OPTIONS_KEYS.map((key) => [key, options[key]]));
  const lines: string[] = [];
  writeMapping(upstream, 0, lines);
  return `${lines.join('\n')}\n`;
}

function writeMapping(mapping: Record<string, unknown>, indent: number, lines: string[]): void {
  for (const [key, value] of Object.entries(mapping)) {
    if (value === undefined) continue;
    const head = `${' '.repeat(indent)}${scalarText(key, null)}:`;
    if (isMapping(value) && Object.keys(value).length > 0) {
      lines.push(head);
      writeMapping(value, indent + 2, lines);
    } else if (Array.isArray(value) && value.length > 0) {
      lines.push(head);
      writeSequence(value, indent, key, lines);
    } else {
      lines.push(`${head} ${emptyOrScalar(value, key)}`);
    }
  }
}

/** PyYAML puts a block sequence's dashes at its key's indentation. */
function writeSequence(items: unknown[], indent: number, key: string, lines: string[]): void {
  for (const item of items) {
    const nested = (isMapping(item) && Object.keys(item).length > 0) || (Array.isArray(item) && item.length > 0);
    if (!nested) {
      lines.push(`${' '.repeat(indent)}- ${emptyOrScalar(item, key)}`);
      continue;
    }
    // A nested block starts on the dash's line: write it two deeper, then put the dash in.
    const block: string[] = [];
    if (Array.isArray(item)) writeSequence(item, indent + 2, key, block);
    else writeMapping(item, indent + 2, block);
    block[0] = `${' '.repeat(indent)}- ${block[0].slice(indent + 2)}`;
    lines.push(...block);
  }
}

function emptyOrScalar(value: unknown, key: string): string {
  if (Array.isArray(value)) return '[]';
  if (isMapping(value)) return '{}';
  return scalarText(value, key);
}

function scalarText(value: unknown, key: string | null): string {
  if (value === null || value === undefined) return 'null';
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (typeof value === 'number') {
    const asFloat = key !== null && FLOAT_KEYS.has(key) && INT_DEFAULTS[key] !== value;
    return asFloat || !Number.isInteger(value) ? pythonFloat(value) : String(value);
  }
  const text = String(value);
  // Control characters would need PyYAML's double-quoted escapes; JSON's are the same there.
  if (/[\u0000-\u001f\u007f]/.test(text)) return JSON.stringify(text);
  return stringify(text, { version: '1.1', singleQuote: true, lineWidth: 0 }).trimEnd();
}

/**
 * A float as PyYAML writes it: Python's repr (shortest round-trip digits, exponent form below
 * 1e-4 and from 1e16 up) with `.0` added to an exponent form without a point (`1.0e-05`), and
 * YAML's spellings of NaN and the infinities.
 */
export function pythonFloat(value: number): string {
  if (Number.isNaN(value)) return '.nan';
  if (value === Infinity) return '.inf';
  if (value === -Infinity) return '-.inf';
  const repr = floatRepr(value);
  return repr.includes('e') && !repr.includes('.') ? repr.replace('e', '.0e') : repr;
}
