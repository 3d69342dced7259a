/**
 * The run's options from mlagents-learn's command line and YAML file, as upstream's
 * RunOptions.from_argparse: defaults, overridden by the file, overridden by the flags typed.
 */
import * as fs from 'fs';
import * as path from 'path';
import { LineCounter, isScalar, parseDocument, visit } from 'yaml';
import { Logger, consoleLogger } from '../common/logger';
import { parseCommandLine } from './command-line';
import { ConfigError } from './errors';
import { ConfigSource, configError, describe, isMapping, namedTrainerSettings, optionsSource } from './reader';
import { checkFolderName } from './run-paths';
import { BUILT_TRAINER_TYPES, CheckpointSettings, RunOptions, TrainerSettings } from './settings';
import { defaultTrainerSettings, structureRunOptions } from './structure';

/**
 * Loads the options of a run. `argv` is mlagents-learn's arguments (without `node` and the
 * script); a relative config path is taken from `cwd`. Throws ConfigError for anything wrong,
 * and commander's CommanderError (exit code 0) after printing the usage for `--help`.
 */
export function loadRunOptions(
  argv: readonly string[],
  cwd: string = process.cwd(),
  logger: Logger = consoleLogger(),
): RunOptions {
  const commandLine = parseCommandLine(argv);
  const configPath = commandLine.configPath === null ? null : path.resolve(cwd, commandLine.configPath);
  const merged: Record<string, unknown> = {
    checkpoint_settings: {},
    env_settings: {},
    engine_settings: {},
    torch_settings: {},
    ...(configPath === null ? {} : readConfigFile(configPath, logger)),
  };

  const flags = new Map<string, string>();
  let deterministic = false;
  for (const { flag, section, key, value } of commandLine.given) {
    if (key === 'deterministic') {
      deterministic = true;
    } else if (section === null) {
      merged[key] = value;
      flags.set(key, flag);
    } else {
      const settings = merged[section];
      // A section that is not a mapping gets its own error when read.
      if (!isMapping(settings)) continue;
      settings[key] = value;
      flags.set(`${section}.${key}`, flag);
    }
  }

  const source: ConfigSource = { file: configPath, flags, logger };
  const options = structureRunOptions(merged, source);
  if (deterministic) {
    // As upstream, the flag reaches the behaviors the file names, not default_settings.
    for (const settings of Object.values(options.behaviors)) settings.network_settings.deterministic = true;
  }
  const givenKeys = new Set(commandLine.given.map((g) => g.key));
  preferResumeOrInitialization(options.checkpoint_settings, givenKeys, logger);
  checkFolderName(options.checkpoint_settings.run_id, 'checkpoint_settings.run_id', 'run id', source);
  if (options.checkpoint_settings.initialize_from !== null) {
    checkFolderName(options.checkpoint_settings.initialize_from, 'checkpoint_settings.initialize_from', 'run id', source);
  }

  if (options.checkpoint_settings.load_model) {
    logger.warning('The --load option has been deprecated. Please use the --resume option instead.');
  }
  if (options.checkpoint_settings.train_model) {
    logger.warning(
      'The --train option has been deprecated. Train mode is now the default. Use --inference to run in inference mode.',
    );
  }
  for (const flag of commandLine.removedFlags) logger.warning(`The command line argument ${flag} was removed.`);

  return {
    ...options,
    extras: {
      config_path: configPath,
      bind_address: commandLine.bindAddress,
      backend: commandLine.backend,
      max_message_mib: commandLine.maxMessageMiB,
      board_port: commandLine.boardPort,
    },
  };
}

/** The YAML file as a mapping, read as PyYAML reads it (YAML 1.1: yes/no booleans, merge keys). */
function readConfigFile(file: string, logger: Logger): Record<string, unknown> {
  let bytes: Buffer;
  try {
    bytes = fs.readFileSync(file);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'EISDIR' || code === 'ENOTDIR') {
      throw new ConfigError(file, null, `Config file could not be found at ${file}.`);
    }
    throw new ConfigError(file, null, `Config file could not be read (${(error as Error).message}).`);
  }
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    const detail = `There was an error decoding Config file from ${file}. Make sure your file is saved using UTF-8.`;
    throw new ConfigError(file, null, detail);
  }

  const lineCounter = new LineCounter();
  const document = parseDocument(text, {
    version: '1.1',
    merge: true,
    uniqueKeys: false,
    // Dates stay text (run_id: 2024-05-01); the settings have no date field.
    customTags: (tags) =>
      tags.filter((tag) => (typeof tag === 'string' ? tag !== 'timestamp' : tag.tag !== 'tag:yaml.org,2002:timestamp')),
    lineCounter,
  });
  if (document.errors.length > 0) {
    const detail = `Error parsing yaml file. Please check for formatting errors. ${document.errors[0].message}`;
    throw new ConfigError(file, null, detail);
  }
  // PyYAML lets a repeated key's last value win; so do we, but say so, since it is rarely meant.
  visit(document, {
    Map(_, map) {
      const seen = new Set<string>();
      for (const pair of map.items) {
        const key = isScalar(pair.key) ? String(pair.key.value) : String(pair.key);
        if (seen.has(key)) {
          const line = isScalar(pair.key) && pair.key.range ? ` (line ${lineCounter.linePos(pair.key.range[0]).line})` : '';
          logger.warning(`${file}: the key "${key}" appears twice in one mapping${line}; its last value is used.`);
        }
        seen.add(key);
      }
    },
  });

  const contents: unknown = document.toJS();
  if (contents === null || contents === undefined) {
    throw new ConfigError(file, null, 'the config file is empty; it should hold at least a behaviors: mapping.');
  }
  if (!isMapping(contents)) throw new ConfigError(file, null, `expected a mapping at the top level, got ${describe(contents)}.`);
  return contents;
}

/** Upstream's rule when both resume and initialize_from are set: the one on the command line wins. */
function preferResumeOrInitialization(settings: CheckpointSettings, givenKeys: ReadonlySet<string>, logger: Logger): void {
  if (!settings.resume || settings.initialize_from === null) return;
  const both = `Both 'resume' and 'initialize_from=${settings.initialize_from}' are set`;
  if (givenKeys.has('resume')) {
    logger.warning(`${both}! Current run will be resumed ignoring initialization.`);
    settings.initialize_from = null;
  } else if (givenKeys.has('initialize_from')) {
    logger.warning(`${both}! ${settings.run_id} is initialized_from ${settings.initialize_from} and resume will be ignored.`);
    settings.resume = false;
  } else {
    logger.warning(`${both} in yaml file! Current run will be resumed ignoring initialization.`);
    settings.initialize_from = null;
  }
}

/**
 * The settings of a behavior the environment announced, as upstream's DefaultTrainerDict: the
 * configured ones; else a copy of default_settings; else an error when a config file was given;
 * else ML-Agents' defaults with a warning. A behavior given settings this way joins
 * `options.behaviors`, so a later configuration.yaml lists it, as upstream's does.
 */
export function settingsForBehavior(options: RunOptions, behaviorName: string, logger: Logger): TrainerSettings {
  const configured = options.behaviors[behaviorName];
  if (configured !== undefined) return configured;
  let settings: TrainerSettings;
  if (options.default_settings !== null) {
    settings = structuredClone(options.default_settings);
  } else if (options.extras.config_path !== null) {
    throw configError(
      optionsSource(options),
      `behaviors.${behaviorName}`,
      `The behavior name ${behaviorName} has not been specified in the trainer configuration. ` +
        `Please add an entry in the configuration file for ${behaviorName}, or set default_settings.`,
    );
  } else {
    logger.warning(
      `Behavior name ${behaviorName} does not match any behaviors specified in the trainer configuration file. ` +
        'A default configuration will be used.',
    );
    settings = defaultTrainerSettings(optionsSource(options, logger));
  }
  options.behaviors[behaviorName] = settings;
  return settings;
}

/**
 * Refuses trainer types this project cannot train yet (see BUILT_TRAINER_TYPES), naming the
 * behavior. Kept out of loading so that every ML-Agents configuration loads and validates.
 */
export function checkTrainerTypesBuilt(options: RunOptions): void {
  const source = optionsSource(options);
  for (const [at, settings] of namedTrainerSettings(options)) {
    if (settings === null || BUILT_TRAINER_TYPES.includes(settings.trainer_type)) continue;
    throw configError(
      source,
      `${at}.trainer_type`,
      `trainer_type ${settings.trainer_type} is not available in this trainer yet; ` +
        `it trains ${BUILT_TRAINER_TYPES.join(', ')}. ` +
        "Train this behavior with ML-Agents' own mlagents-learn, or change its trainer_type.",
    );
  }
}
