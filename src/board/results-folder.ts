/**
 * What the board knows of a results folder, read only from the files the trainer writes (ours or
 * ML-Agents' Python trainer):
 *
 *   <results>/<run>/configuration.yaml                       the resolved options (max_steps, lessons' names)
 *   <results>/<run>/run_logs/training_status.json            checkpoints, lessons, ELO
 *   <results>/<run>/run_logs/timers.json                     where the time goes
 *   <results>/<run>/run_logs/environments.json               (ours) the environments' state
 *   <results>/<run>/<behavior>/events.out.tfevents.*         the scalars
 *
 * Symbolic links are never followed. A file that cannot be read or parsed becomes a note of its
 * run, replaced once the file reads well again.
 */
import * as fs from 'fs';
import * as path from 'path';
import { parse as parseYaml } from 'yaml';
import { ENVIRONMENTS_FILE_NAME, type EnvironmentsStatus } from '../stats/environment-status';
import { TIMERS_FILE_NAME, type TimerTree } from '../stats/timers';
import { StatusType, TRAINING_STATUS_FILE_NAME, type ModelCheckpoint } from '../stats/training-status';
import { EventFileTail } from './event-reader';
import { ScalarSeries, type SeriesPoints } from './scalar-series';

export const EVENT_FILE_PREFIX = 'events.out.tfevents.';
const CONFIGURATION_FILE = 'configuration.yaml';
const RUN_LOGS = 'run_logs';
/** How many summaries back the steps/s of a live run is measured over. */
const RATE_WINDOW = 10;

/** Something the page must redraw. */
export type BoardUpdate =
  | { kind: 'points'; run: string; behavior: string; tag: string; points: SeriesPoints }
  /** The list of runs, behaviors or tags changed. */
  | { kind: 'runs' }
  /** A run's configuration, status, timers or environments changed. */
  | { kind: 'run'; run: string };

export interface CheckpointView {
  behavior: string;
  steps: number;
  reward: number | null;
  /** Seconds since the epoch. */
  creationTime: number;
  /** The .onnx as a path inside the results folder ("/"-separated), or null when it is gone. */
  file: string | null;
  final: boolean;
}

export interface BehaviorSummary {
  name: string;
  tags: Array<{ tag: string; points: number }>;
  lastStep: number;
  maxSteps: number | null;
  /** Over the last summaries; null before two summaries at different times. */
  stepsPerSecond: number | null;
  secondsLeft: number | null;
}

export interface RunSummary {
  name: string;
  /** Training now: its environments.json says so or, without one, its files changed while watched. */
  live: boolean;
  behaviors: BehaviorSummary[];
  notes: string[];
}

export interface RunDetail {
  name: string;
  configuration: string | null;
  checkpoints: CheckpointView[];
  /** Per environment parameter, its lesson number and, from configuration.yaml, the lesson's name. */
  lessons: Array<{ parameter: string; lesson: number; name: string | null }>;
  elo: Array<{ behavior: string; elo: number }>;
  timers: TimerTree | null;
  environments: EnvironmentsStatus | null;
  notes: string[];
}

class BehaviorState {
  readonly tails = new Map<string, EventFileTail>();
  readonly series = new Map<string, ScalarSeries>();
  /** (step, wall time) of each summary, for steps/s. */
  readonly summaries: Array<[number, number]> = [];

  constructor(readonly name: string) {}

  /** Reads what was appended to the event file; per tag, how many points it had before. */
  read(filePath: string): Map<string, number> {
    let tail = this.tails.get(filePath);
    if (tail === undefined) {
      tail = new EventFileTail(filePath);
      this.tails.set(filePath, tail);
    }
    const before = new Map([...this.series].map(([tag, series]) => [tag, series.length]));
    tail.read((tag, step, wallTime, value) => {
      let series = this.series.get(tag);
      if (series === undefined) {
        series = new ScalarSeries();
        this.series.set(tag, series);
      }
      series.push(step, wallTime, value);
      const last = this.summaries[this.summaries.length - 1];
      if (last === undefined || last[0] !== step) this.summaries.push([step, wallTime]);
    });
    return new Map([...this.series.keys()].map((tag) => [tag, before.get(tag) ?? 0]));
  }

  get notes(): string[] {
    const notes: string[] = [];
    for (const tail of this.tails.values()) {
      notes.push(...tail.notes);
      if (tail.cutAt !== null) notes.push(`${tail.filePath}: ends inside a record at byte offset ${tail.cutAt} (cut, or being written)`);
    }
    return notes;
  }

  get lastStep(): number {
    return this.summaries.length === 0 ? 0 : this.summaries[this.summaries.length - 1][0];
  }

  stepsPerSecond(): number | null {
    const window = this.summaries.slice(-RATE_WINDOW);
    if (window.length < 2) return null;
    const [firstStep, firstTime] = window[0];
    const [lastStep, lastTime] = window[window.length - 1];
    return lastTime > firstTime ? (lastStep - firstStep) / (lastTime - firstTime) : null;
  }
}

class RunState {
  readonly behaviors = new Map<string, BehaviorState>();
  configuration: { text: string; parsed: Record<string, unknown> } | null = null;
  status: Record<string, Record<string, unknown>> | null = null;
  timers: TimerTree | null = null;
  environments: EnvironmentsStatus | null = null;
  /** Problems with the run's own files, by file. */
  readonly fileNotes = new Map<string, string>();
  changedWhileWatched = false;

  constructor(
    readonly name: string,
    readonly dir: string,
  ) {}

  get live(): boolean {
    if (this.environments !== null) return this.environments.state !== 'ended';
    return this.changedWhileWatched;
  }

  /** A behavior's max_steps from configuration.yaml (its own section, or default_settings). */
  maxSteps(behavior: string): number | null {
    const parsed = this.configuration?.parsed;
    const section = (key: string) => (parsed?.[key] ?? null) as Record<string, unknown> | null;
    const own = (section('behaviors')?.[behavior] ?? null) as Record<string, unknown> | null;
    const steps = own?.max_steps ?? section('default_settings')?.max_steps;
    return typeof steps === 'number' ? steps : null;
  }
}

export class ResultsFolder {
  private readonly runs = new Map<string, RunState>();

  /** `root` must be the real path of the results folder (no symbolic link in it). */
  constructor(readonly root: string) {}

  /** Reads every run from scratch. */
  load(): void {
    for (const name of subfolders(this.root)) this.addRun(name);
  }

  /**
   * Takes in a change of `filePath` (added, appended, replaced or removed) and says what the page
   * must redraw.
   */
  changed(filePath: string): BoardUpdate[] {
    const parts = path.relative(this.root, filePath).split(path.sep);
    if (parts[0] === '' || parts[0] === '..' || path.isAbsolute(parts[0])) return [];
    const run = this.runs.get(parts[0]);
    if (run === undefined) {
      if (!isRealFolder(path.join(this.root, parts[0]))) return [];
      this.addRun(parts[0]);
      this.runs.get(parts[0])!.changedWhileWatched = true;
      return [{ kind: 'runs' }];
    }
    run.changedWhileWatched = true;
    if (!isRealFolder(run.dir)) {
      this.runs.delete(run.name);
      return [{ kind: 'runs' }];
    }
    if (parts.length === 2 && parts[1] === CONFIGURATION_FILE) {
      readConfiguration(run);
      return [{ kind: 'run', run: run.name }, { kind: 'runs' }];
    }
    if (parts.length === 3 && parts[1] === RUN_LOGS) {
      if (!readRunLog(run, parts[2])) return [];
      return [{ kind: 'run', run: run.name }, { kind: 'runs' }];
    }
    if (parts.length === 1 || parts.length === 2) {
      // A folder appeared or went (a behavior's, or a final model beside them): the run's structure.
      const before = [...run.behaviors.keys()].join('\0');
      this.readBehaviors(run);
      return [...run.behaviors.keys()].join('\0') === before ? [{ kind: 'run', run: run.name }] : [{ kind: 'runs' }];
    }
    if (parts.length === 3 && parts[2].startsWith(EVENT_FILE_PREFIX)) return this.eventFileChanged(run, parts[1], filePath);
    // A checkpoint's file came or went: the list of checkpoints says whether it can be downloaded.
    if (parts.length === 3 && parts[2].endsWith('.onnx')) return [{ kind: 'run', run: run.name }];
    return [];
  }

  /** Every event file read so far. */
  eventFiles(): string[] {
    return [...this.runs.values()].flatMap((run) => [...run.behaviors.values()].flatMap((behavior) => [...behavior.tails.keys()]));
  }

  summaries(): RunSummary[] {
    return [...this.runs.values()]
      .sort((a, b) => a.name.localeCompare(b.name))
      .map((run) => ({
        name: run.name,
        live: run.live,
        behaviors: [...run.behaviors.values()].map((behavior) => {
          const maxSteps = run.maxSteps(behavior.name);
          const rate = behavior.stepsPerSecond();
          const left = maxSteps === null || rate === null || rate <= 0 ? null : Math.max(0, maxSteps - behavior.lastStep) / rate;
          return {
            name: behavior.name,
            tags: [...behavior.series].map(([tag, series]) => ({ tag, points: series.length })).sort((a, b) => a.tag.localeCompare(b.tag)),
            lastStep: behavior.lastStep,
            maxSteps,
            stepsPerSecond: run.live ? rate : null,
            secondsLeft: run.live ? left : null,
          };
        }),
        notes: [...run.fileNotes.values(), ...[...run.behaviors.values()].flatMap((b) => b.notes)],
      }));
  }

  detail(runName: string): RunDetail | null {
    const run = this.runs.get(runName);
    if (run === undefined) return null;
    const status = run.status ?? {};
    const checkpoints: CheckpointView[] = [];
    const lessons: RunDetail['lessons'] = [];
    const elo: RunDetail['elo'] = [];
    for (const [category, state] of Object.entries(status)) {
      if (category === StatusType.STATS_METADATA || typeof state !== 'object' || state === null) continue;
      const view = (checkpoint: ModelCheckpoint, final: boolean): CheckpointView => ({
        behavior: category,
        steps: checkpoint.steps,
        reward: checkpoint.reward ?? null,
        creationTime: checkpoint.creation_time,
        file: this.modelFile(run, String(checkpoint.file_path)),
        final,
      });
      const list = state[StatusType.CHECKPOINTS];
      if (Array.isArray(list)) checkpoints.push(...list.map((c: ModelCheckpoint) => view(c, false)));
      const final = state[StatusType.FINAL_CHECKPOINT] as ModelCheckpoint | undefined;
      if (final !== undefined) checkpoints.push(view(final, true));
      const lesson = state[StatusType.LESSON_NUM];
      if (typeof lesson === 'number') lessons.push({ parameter: category, lesson, name: lessonName(run, category, lesson) });
      const rating = state[StatusType.ELO];
      if (typeof rating === 'number') elo.push({ behavior: category, elo: rating });
    }
    return {
      name: run.name,
      configuration: run.configuration?.text ?? null,
      checkpoints,
      lessons,
      elo,
      timers: run.timers,
      environments: run.environments,
      notes: [...run.fileNotes.values()],
    };
  }

  /** The points of one tag, at most about `maxPoints` of them; null when there is no such series. */
  points(runName: string, behavior: string, tag: string, maxPoints: number): (SeriesPoints & { total: number }) | null {
    const series = this.runs.get(runName)?.behaviors.get(behavior)?.series.get(tag);
    if (series === undefined) return null;
    return { ...series.overview(maxPoints), total: series.length };
  }

  private addRun(name: string): void {
    const run = new RunState(name, path.join(this.root, name));
    this.runs.set(name, run);
    readConfiguration(run);
    for (const file of [TRAINING_STATUS_FILE_NAME, TIMERS_FILE_NAME, ENVIRONMENTS_FILE_NAME]) readRunLog(run, file);
    this.readBehaviors(run);
  }

  /** Finds the run's behavior folders (those holding event files) and reads what is new in them. */
  private readBehaviors(run: RunState): void {
    const present = new Set<string>();
    for (const name of subfolders(run.dir)) {
      if (name === RUN_LOGS) continue;
      const files = eventFiles(path.join(run.dir, name));
      if (files.length === 0) continue;
      present.add(name);
      if (!run.behaviors.has(name)) run.behaviors.set(name, new BehaviorState(name));
      for (const file of files) run.behaviors.get(name)!.read(file);
    }
    for (const name of run.behaviors.keys()) if (!present.has(name)) run.behaviors.delete(name);
  }

  private eventFileChanged(run: RunState, behaviorName: string, filePath: string): BoardUpdate[] {
    let behavior = run.behaviors.get(behaviorName);
    if (!isRealFile(filePath)) {
      // An event file went (a rerun with --force deletes the old ones): read the behavior anew.
      if (behavior?.tails.has(filePath)) {
        run.behaviors.delete(behaviorName);
        this.readBehaviors(run);
        return [{ kind: 'runs' }];
      }
      return [];
    }
    const isNewBehavior = behavior === undefined;
    if (behavior === undefined) {
      behavior = new BehaviorState(behaviorName);
      run.behaviors.set(behaviorName, behavior);
    }
    const tagsBefore = behavior.series.size;
    const updates: BoardUpdate[] = [];
    for (const [tag, from] of behavior.read(filePath)) {
      const series = behavior.series.get(tag)!;
      if (series.length > from) {
        updates.push({ kind: 'points', run: run.name, behavior: behaviorName, tag, points: series.pointsFrom(from) });
      }
    }
    if (isNewBehavior || behavior.series.size !== tagsBefore) updates.push({ kind: 'runs' });
    return updates;
  }

  /**
   * Where a checkpoint's .onnx lies in this results folder. training_status.json holds the path
   * as the trainer saw it (relative to its working folder, or absolute, maybe on another machine),
   * so the file is looked for by its last components inside the run's folder.
   */
  private modelFile(run: RunState, recorded: string): string | null {
    const parts = recorded.split(/[/\\]/).filter((part) => part !== '' && part !== '.' && part !== '..');
    for (let count = 1; count <= Math.min(2, parts.length); count++) {
      const candidate = path.join(run.dir, ...parts.slice(-count));
      if (isRealFile(candidate)) return [run.name, ...parts.slice(-count)].join('/');
    }
    return null;
  }
}

function readConfiguration(run: RunState): void {
  const file = path.join(run.dir, CONFIGURATION_FILE);
  const text = readText(run, file);
  if (text === null) {
    run.configuration = null;
    return;
  }
  try {
    const parsed = parseYaml(text) as unknown;
    run.configuration = { text, parsed: typeof parsed === 'object' && parsed !== null ? (parsed as Record<string, unknown>) : {} };
  } catch (error) {
    run.fileNotes.set(file, `${file}: not valid YAML (${(error as Error).message.split('\n')[0]})`);
    run.configuration = { text, parsed: {} };
  }
}

/** Reads one of run_logs' JSON files; false for another file. */
function readRunLog(run: RunState, name: string): boolean {
  const assign: Record<string, (value: unknown) => void> = {
    [TRAINING_STATUS_FILE_NAME]: (value) => (run.status = value as RunState['status']),
    [TIMERS_FILE_NAME]: (value) => (run.timers = value as TimerTree | null),
    [ENVIRONMENTS_FILE_NAME]: (value) => (run.environments = value as EnvironmentsStatus | null),
  };
  const set = assign[name];
  if (set === undefined) return false;
  const file = path.join(run.dir, RUN_LOGS, name);
  const text = readText(run, file);
  if (text === null) {
    set(null);
    return true;
  }
  try {
    set(JSON.parse(text));
  } catch (error) {
    // Python's json.dump writes in place: a read can meet half a file, which the next change completes.
    run.fileNotes.set(file, `${file}: not valid JSON (${(error as Error).message}); kept the last good read`);
  }
  return true;
}

/** A regular file's text (no symbolic link), or null when it is absent. Clears the file's note. */
function readText(run: RunState, file: string): string | null {
  run.fileNotes.delete(file);
  if (!isRealFile(file)) return null;
  try {
    return fs.readFileSync(file, 'utf8');
  } catch (error) {
    run.fileNotes.set(file, `${file}: could not be read (${(error as Error).message})`);
    return null;
  }
}

function lessonName(run: RunState, parameter: string, lesson: number): string | null {
  const parameters = run.configuration?.parsed.environment_parameters as Record<string, { curriculum?: Array<{ name?: unknown }> }> | undefined;
  const name = parameters?.[parameter]?.curriculum?.[lesson]?.name;
  return typeof name === 'string' ? name : null;
}

/** The folders directly in `dir`, symbolic links left out. */
function subfolders(dir: string): string[] {
  try {
    return fs
      .readdirSync(dir, { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => entry.name)
      .sort();
  } catch {
    return [];
  }
}

/** The event files of a behavior's folder in the order TensorBoard reads them, links left out. */
function eventFiles(dir: string): string[] {
  return fs
    .readdirSync(dir, { withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.startsWith(EVENT_FILE_PREFIX))
    .map((entry) => path.join(dir, entry.name))
    .sort();
}

function isRealFolder(dir: string): boolean {
  return fs.lstatSync(dir, { throwIfNoEntry: false })?.isDirectory() ?? false;
}

function isRealFile(file: string): boolean {
  return fs.lstatSync(file, { throwIfNoEntry: false })?.isFile() ?? false;
}
