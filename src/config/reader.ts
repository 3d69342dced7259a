/**
 * Reading one mapping of the parsed YAML into typed values, with every error naming the key's
 * full path and where its value came from.
 */
import { Logger, memoryLogger } from '../common/logger';
import { ConfigError, didYouMean } from './errors';
import { RunOptions, TrainerSettings } from './settings';

/** Where the values being read came from, for error messages and warnings. */
export interface ConfigSource {
  /** Absolute path of the YAML file; null when the run has none. */
  file: string | null;
  /** Key paths whose value was given by a command-line flag, with that flag. */
  flags: ReadonlyMap<string, string>;
  logger: Logger;
}

/** Bounds of a number, each optional and inclusive except `above`. */
export interface Limits {
  atLeast?: number;
  above?: number;
  atMost?: number;
}

export function isMapping(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

export function childPath(path: string, key: string): string {
  return path === '' ? key : `${path}.${key}`;
}

/** A value as an error message shows it. */
export function describe(value: unknown): string {
  if (value === null || value === undefined) return 'null';
  if (typeof value === 'string') return JSON.stringify(value);
  if (Array.isArray(value)) return `a list (${JSON.stringify(value)})`;
  if (typeof value === 'object') return 'a mapping';
  return String(value);
}

/** An error about `keyPath`, blaming the flag that set it when one did, else the file. */
export function configError(source: ConfigSource, keyPath: string | null, detail: string): ConfigError {
  const flag = keyPath === null ? undefined : source.flags.get(keyPath);
  if (flag !== undefined) return new ConfigError(`command line (${flag})`, keyPath, detail);
  return new ConfigError(source.file ?? 'command line', keyPath, detail);
}

/** The source of options already loaded: their file, no flags known any more. */
export function optionsSource(options: RunOptions, logger: Logger = memoryLogger()): ConfigSource {
  return { file: options.extras.config_path, flags: new Map(), logger };
}

/**
 * The trainer settings of a run with the key path each sits at, for errors that name it:
 * default_settings first (null when the file has none), then each behavior's.
 */
export function namedTrainerSettings(options: RunOptions): Array<[string, TrainerSettings | null]> {
  return [
    ['default_settings', options.default_settings],
    ...Object.entries(options.behaviors).map(([name, settings]): [string, TrainerSettings] => [`behaviors.${name}`, settings]),
  ];
}

export type Structure<T> = (value: unknown, path: string, source: ConfigSource) => T;

export class MappingReader {
  private constructor(
    readonly source: ConfigSource,
    readonly path: string,
    private readonly entries: Record<string, unknown>,
    private readonly keys: readonly string[],
  ) {}

  /**
   * Opens `value` as a mapping whose keys must all be among `keys`; `what` names the mapping in
   * errors ("unknown key ... in <what>"). Unknown keys fail here, before any value is read, since
   * a misspelt key is the likeliest cause of whatever else looks wrong.
   */
  static open(source: ConfigSource, path: string, value: unknown, keys: readonly string[], what: string): MappingReader {
    if (!isMapping(value)) {
      throw configError(source, path === '' ? null : path, `expected a mapping of ${what}, got ${describe(value)}.`);
    }
    for (const key of Object.keys(value)) {
      if (!keys.includes(key)) {
        throw configError(
          source,
          childPath(path, key),
          `unknown key "${key}" in ${what}.${didYouMean(key, keys)} Valid keys: ${keys.join(', ')}.`,
        );
      }
    }
    return new MappingReader(source, path, value, keys);
  }

  at(key: string): string {
    return childPath(this.path, key);
  }

  fail(key: string, detail: string): ConfigError {
    return configError(this.source, this.at(key), detail);
  }

  /** Whether the mapping holds `key`, even with a null value. */
  has(key: string): boolean {
    this.expectKnown(key);
    return Object.prototype.hasOwnProperty.call(this.entries, key);
  }

  raw(key: string): unknown {
    this.expectKnown(key);
    return this.entries[key];
  }

  int(key: string, fallback: number, limits: Limits = {}): number {
    if (!this.has(key)) return fallback;
    const value = this.entries[key];
    if (typeof value !== 'number' || !Number.isInteger(value)) {
      throw this.fail(key, `expected an integer, got ${describe(value)}.`);
    }
    return this.withinLimits(key, value, limits);
  }

  /** An integer that ML-Agents also accepts written as a float (legacy `max_steps: 5.0e5`). */
  wholeNumber(key: string, fallback: number, limits: Limits = {}): number {
    if (!this.has(key)) return fallback;
    const value = this.entries[key];
    if (typeof value !== 'number' || !Number.isFinite(value)) {
      throw this.fail(key, `expected an integer, got ${describe(value)}.`);
    }
    return this.withinLimits(key, Math.trunc(value), limits);
  }

  optionalInt(key: string, fallback: number | null, limits: Limits = {}): number | null {
    if (!this.has(key)) return fallback;
    return this.entries[key] === null ? null : this.int(key, 0, limits);
  }

  float(key: string, fallback: number, limits: Limits = {}): number {
    if (!this.has(key)) return fallback;
    const value = this.entries[key];
    if (typeof value !== 'number' || !Number.isFinite(value)) throw this.fail(key, `expected a number, got ${describe(value)}.`);
    return this.withinLimits(key, value, limits);
  }

  bool(key: string, fallback: boolean): boolean {
    if (!this.has(key)) return fallback;
    const value = this.entries[key];
    if (typeof value !== 'boolean') throw this.fail(key, `expected true or false, got ${describe(value)}.`);
    return value;
  }

  /** A string; a number is taken as its text, as ML-Agents does for names like `run_id: 2024`. */
  string(key: string, fallback: string): string {
    if (!this.has(key)) return fallback;
    const value = this.entries[key];
    if (typeof value === 'number') return String(value);
    if (typeof value !== 'string') throw this.fail(key, `expected a string, got ${describe(value)}.`);
    return value;
  }

  optionalString(key: string, fallback: string | null): string | null {
    if (!this.has(key)) return fallback;
    return this.entries[key] === null ? null : this.string(key, '');
  }

  requiredString(key: string): string {
    if (!this.has(key) || this.entries[key] === null) throw this.fail(key, `missing required key "${key}".`);
    return this.string(key, '');
  }

  /** A list of strings (numbers taken as their text), or null. */
  optionalStrings(key: string, fallback: string[] | null): string[] | null {
    if (!this.has(key)) return fallback;
    const value = this.entries[key];
    if (value === null) return null;
    if (!Array.isArray(value) || !value.every((item) => typeof item === 'string' || typeof item === 'number')) {
      throw this.fail(key, `expected a list of strings, got ${describe(value)}.`);
    }
    return value.map(String);
  }

  /** One of `choices`; without a fallback the key is required. `noun` names what is chosen. */
  choice<T extends string>(key: string, choices: readonly T[], noun: string, fallback?: T): T {
    if (!this.has(key)) {
      if (fallback !== undefined) return fallback;
      throw this.fail(key, `missing required key "${key}": the ${noun}, one of ${choices.join(', ')}.`);
    }
    const value = this.entries[key];
    if (typeof value !== 'string' || !(choices as readonly string[]).includes(value)) {
      const hint = typeof value === 'string' ? didYouMean(value, choices) : '';
      throw this.fail(key, `unknown ${noun} ${describe(value)}.${hint} The known ones are: ${choices.join(', ')}.`);
    }
    return value as T;
  }

  /** A nested settings mapping, its defaults when the key is absent. */
  nested<T>(key: string, structure: Structure<T>): T {
    return structure(this.has(key) ? this.entries[key] : {}, this.at(key), this.source);
  }

  /** A nested settings mapping that may be absent or null (meaning: not used). */
  optional<T>(key: string, structure: Structure<T>): T | null {
    if (!this.has(key) || this.entries[key] === null) return null;
    return structure(this.entries[key], this.at(key), this.source);
  }

  private withinLimits(key: string, value: number, { atLeast, above, atMost }: Limits): number {
    if (atLeast !== undefined && atMost !== undefined && (value < atLeast || value > atMost)) {
      throw this.fail(key, `must be between ${atLeast} and ${atMost}, got ${value}.`);
    }
    if (atLeast !== undefined && value < atLeast) throw this.fail(key, `must be at least ${atLeast}, got ${value}.`);
    if (above !== undefined && value <= above) throw this.fail(key, `must be greater than ${above}, got ${value}.`);
    if (atMost !== undefined && value > atMost) throw this.fail(key, `must be at most ${atMost}, got ${value}.`);
    return value;
  }

  /** Reading a key the mapping does not declare is a bug in this module, not in the YAML. */
  private expectKnown(key: string): void {
    if (!this.keys.includes(key)) throw new Error(`internal: "${key}" is not declared for ${this.path || 'the top level'}`);
  }
}
