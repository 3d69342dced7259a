/** The run configuration of mlagents-learn: flags, YAML schema, defaults, validation, results layout. */
export * from './settings';
export { ConfigError } from './errors';
export { loadRunOptions, settingsForBehavior, checkTrainerTypesBuilt } from './load';
export { parseCommandLine } from './command-line';
export type { CommandLine, GivenFlag, FlagSection } from './command-line';
export { toResolvedYaml } from './resolved-yaml';
export { resolveRunPaths, behaviorDir, checkRunDirectory } from './run-paths';
export type { RunPaths } from './run-paths';
