/**
 * The built-in environments: executables under dist/sims that connect to a trainer exactly as
 * a Unity build does. `--env=builtin:NAME` resolves to one of them.
 */
import * as fs from 'fs';
import * as path from 'path';

const BUILTIN_PREFIX = 'builtin:';

/** Name to the file (relative to dist/sims) of each built-in environment. */
const BUILTIN_FILES: Readonly<Record<string, string>> = {
  '3DBall': 'envs/ball3d.js',
  Basic: 'envs/basic.js',
  DungeonEscape: 'envs/dungeon-escape.js',
  GridWorld: 'envs/gridworld.js',
  Hallway: 'envs/hallway.js',
  Pyramids: 'envs/pyramids.js',
  Scripted: 'scripted-env.js',
  SimpleGoal: 'envs/simple-goal.js',
  Sorter: 'envs/sorter.js',
  Tennis: 'envs/tennis.js',
  Visual3DBall: 'envs/visual3dball.js',
};

/** The built folder: this file runs from dist/sims, or from src/sims under ts-jest or tsx. */
function builtFolder(): string {
  return path.resolve(__dirname, '..', '..', 'dist', 'sims');
}

export function builtinNames(): string[] {
  return Object.keys(BUILTIN_FILES);
}

export function isBuiltinEnv(env: string): boolean {
  return env.startsWith(BUILTIN_PREFIX);
}

/** The absolute path of a built-in environment's executable, from `builtin:NAME` or `NAME`. */
export function builtinExecutable(env: string): string {
  const name = isBuiltinEnv(env) ? env.slice(BUILTIN_PREFIX.length) : env;
  const file = BUILTIN_FILES[name];
  if (file === undefined) {
    throw new Error(
      `There is no built-in environment named "${name}". The built-in environments are: ` +
        `${builtinNames().join(', ')} (use --env=builtin:NAME).`,
    );
  }
  const executable = path.join(builtFolder(), file);
  if (!fs.existsSync(executable)) {
    throw new Error(`The built-in environment ${name} is not built (${executable} is missing): run npm run build.`);
  }
  return executable;
}
