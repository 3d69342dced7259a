/**
 * Unity ML-Agents' demonstration files (.demo), as recorded by Unity's DemonstrationRecorder and
 * read by upstream's demo_loader.py for behavioral cloning and GAIL.
 *
 * The layout, byte for byte:
 *
 *   [0, 33)   the meta area: a varint length, then a DemonstrationMetaProto, then zero bytes up to
 *             byte 33. Unity reserves 32 bytes for the meta (DemonstrationWriter.MetaDataBytes) and
 *             starts the brain parameters one byte later; the Python loader jumps to byte 33
 *             (INITIAL_POS) after the meta, whatever its length.
 *   [33, ..)  a varint length, then the BrainParametersProto of the recorded behavior.
 *   then      one varint length plus AgentInfoActionPairProto per recorded step.
 *   then      (files closed by Unity's writer) the meta once more, without a length prefix: on
 *             closing, Unity writes the final meta bytes at the end of the stream and then again,
 *             length-prefixed, at the start of the file. Readers stop after meta.number_steps
 *             records and never look at this trailer.
 *
 * The meta at the start is first written with zero counts, and rewritten when the recording ends
 * with the number of steps (records), the number of episodes (records flagged done, plus one for
 * the episode in progress when the writer closed) and the mean reward (the float sum of every
 * record's reward divided by the number of episodes).
 */
import * as fs from 'fs';
import * as path from 'path';
import * as protobuf from 'protobufjs';
import {
  AgentInfoActionPair,
  AgentInfoActionPairProto,
  BrainParameters,
  BrainParametersProto,
  DemonstrationMeta,
  DemonstrationMetaProto,
  SpaceTypeProto,
  messageType,
} from './messages';

/** Where the brain parameters start: the meta area's size (upstream's INITIAL_POS, Unity's MetaDataBytes + 1). */
export const DEMO_META_AREA_BYTES = 33;

/** The api_version values of DemonstrationMetaProto that upstream's loader accepts. */
export const SUPPORTED_DEMONSTRATION_VERSIONS: readonly number[] = [0, 1];

/** The api_version Unity's writer puts in the meta (DemonstrationMetaData.ApiVersion). */
export const DEMONSTRATION_API_VERSION = 1;

/** Unity's DemonstrationRecorder cuts demonstration names to this many characters so the meta fits its area. */
export const DEMO_NAME_MAX_LENGTH = 16;

export const DEMO_FILE_EXTENSION = '.demo';

export interface DemoFile {
  meta: DemonstrationMetaProto;
  brainParameters: BrainParametersProto;
  records: AgentInfoActionPairProto[];
}

/** What upstream's behavior_spec_from_proto makes of a demonstration's brain parameters and first record. */
export interface DemoBehaviorSpec {
  /** One shape per observation of the first record, in order. */
  observationShapes: number[][];
  continuousSize: number;
  discreteBranches: number[];
}

// ---------------------------------------------------------------------------------------------
// Finding files

/**
 * The demonstration files at a path, as upstream's get_demo_files: the path itself when it is a
 * .demo file, or the .demo files directly inside it when it is a folder (sorted by name, where
 * upstream takes the folder's listing order).
 */
export function demoFiles(pathOrFolder: string): string[] {
  let stat: fs.Stats;
  try {
    stat = fs.statSync(pathOrFolder);
  } catch {
    throw new Error(`The demonstration file or folder ${pathOrFolder} does not exist.`);
  }
  if (stat.isDirectory()) {
    const found = fs
      .readdirSync(pathOrFolder, { withFileTypes: true })
      .filter((entry) => entry.name.endsWith(DEMO_FILE_EXTENSION) && !entry.isDirectory())
      .map((entry) => path.join(pathOrFolder, entry.name))
      .sort();
    if (found.length === 0) {
      throw new Error(`There are no '${DEMO_FILE_EXTENSION}' files in the folder ${pathOrFolder}.`);
    }
    return found;
  }
  if (!pathOrFolder.endsWith(DEMO_FILE_EXTENSION)) {
    throw new Error(`${pathOrFolder} is not a '${DEMO_FILE_EXTENSION}' file.`);
  }
  return [pathOrFolder];
}

// ---------------------------------------------------------------------------------------------
// Reading

/** Read and parse one .demo file. */
export function readDemoFile(filePath: string): DemoFile {
  let stat: fs.Stats;
  try {
    stat = fs.statSync(filePath);
  } catch {
    throw new Error(`The demonstration file ${filePath} does not exist.`);
  }
  if (stat.isDirectory()) {
    throw new Error(`${filePath} is a folder, not a demonstration file: list its files with demoFiles().`);
  }
  if (!filePath.endsWith(DEMO_FILE_EXTENSION)) {
    throw new Error(`${filePath} is not a '${DEMO_FILE_EXTENSION}' file.`);
  }
  return parseDemo(fs.readFileSync(filePath), filePath);
}

/**
 * Parse the bytes of a .demo file. `source` names the file in error messages.
 *
 * As upstream's loader: the meta must carry a supported api_version; records are read until
 * meta.number_steps of them have been read (what follows is Unity's trailing copy of the meta),
 * or, when number_steps is 0 (a recording that was never closed), until the end of the bytes.
 */
export function parseDemo(bytes: Uint8Array, source = '<bytes>'): DemoFile {
  const reader = new SectionReader(bytes, source);

  const metaLength = reader.length('the demonstration meta (DemonstrationMetaProto)');
  const metaStart = reader.pos;
  if (metaStart + metaLength > DEMO_META_AREA_BYTES) {
    throw reader.corrupt(
      metaStart,
      `the demonstration meta claims ${metaLength} bytes, more than fit in the ${DEMO_META_AREA_BYTES}-byte meta area`,
    );
  }
  const meta = reader.message(DemonstrationMeta, 'DemonstrationMetaProto', metaLength);
  const version = meta.api_version ?? 0;
  if (!SUPPORTED_DEMONSTRATION_VERSIONS.includes(version)) {
    throw new Error(
      `Demonstration file ${source} has api_version ${version}, which this loader does not support ` +
        `(supported: ${SUPPORTED_DEMONSTRATION_VERSIONS.join(', ')}).`,
    );
  }
  if (bytes.length < DEMO_META_AREA_BYTES) {
    throw reader.truncated(bytes.length, `the ${DEMO_META_AREA_BYTES}-byte meta area is cut short`);
  }
  reader.pos = DEMO_META_AREA_BYTES;

  const brainLength = reader.length('the brain parameters (BrainParametersProto)');
  const brainParameters = reader.message(BrainParameters, 'BrainParametersProto', brainLength);

  const expected = meta.number_steps ?? 0;
  const trailer = expected > 0 ? undefined : encodeAsUnity('DemonstrationMetaProto', meta);
  const records: AgentInfoActionPairProto[] = [];
  while (expected > 0 ? records.length < expected : reader.pos < bytes.length) {
    if (trailer !== undefined && reader.restEquals(trailer)) break;
    if (reader.pos >= bytes.length) {
      throw reader.truncated(
        reader.pos,
        `the meta announces ${expected} records (number_steps) but the file ends after ${records.length}`,
      );
    }
    const what = `record ${records.length} (AgentInfoActionPairProto)`;
    const length = reader.length(what);
    records.push(reader.message(AgentInfoActionPair, what, length));
  }
  if (records.length === 0) {
    throw new Error(
      `Demonstration file ${source} holds no records (AgentInfoActionPairProto) after its brain parameters: ` +
        `nothing was recorded.`,
    );
  }
  return { meta, brainParameters, records };
}

/** Reads the length-delimited sections of a .demo file, with errors that say where. */
class SectionReader {
  pos = 0;
  private readonly reader: protobuf.Reader;

  constructor(
    private readonly bytes: Uint8Array,
    private readonly source: string,
  ) {
    this.reader = protobuf.Reader.create(bytes);
  }

  /** A varint length prefix; the section it announces must fit in the bytes. */
  length(what: string): number {
    const at = this.pos;
    this.reader.pos = at;
    let length: number;
    try {
      length = this.reader.uint32();
    } catch {
      throw this.truncated(at, `the length prefix of ${what} runs past the end of the file`);
    }
    this.pos = this.reader.pos;
    if (this.pos + length > this.bytes.length) {
      throw this.truncated(
        at,
        `${what} claims ${length} bytes from byte ${this.pos}, but only ${this.bytes.length - this.pos} remain`,
      );
    }
    return length;
  }

  message<T>(codec: { decode(bytes: Uint8Array): T }, what: string, length: number): T {
    const at = this.pos;
    let decoded: T;
    try {
      decoded = codec.decode(this.bytes.subarray(at, at + length));
    } catch (error) {
      throw this.corrupt(at, `${what} (${length} bytes) does not decode: ${(error as Error).message}`);
    }
    this.pos = at + length;
    return decoded;
  }

  restEquals(expected: Uint8Array): boolean {
    if (this.bytes.length - this.pos !== expected.length) return false;
    return expected.every((b, i) => this.bytes[this.pos + i] === b);
  }

  truncated(offset: number, detail: string): Error {
    return new Error(`Truncated demonstration file ${this.source} at byte ${offset}: ${detail}.`);
  }

  corrupt(offset: number, detail: string): Error {
    return new Error(`Corrupt demonstration file ${this.source} at byte ${offset}: ${detail}.`);
  }
}

/**
 * The behavior spec upstream's loader derives (behavior_spec_from_proto): observation shapes from
 * the first record's observations; the action spec from brain_parameters.action_spec, or, when that
 * names no action at all (files from before communication API 1.3), from the deprecated fields:
 * space type continuous (1) gives vector_action_size_deprecated[0] continuous actions, discrete (0)
 * gives vector_action_size_deprecated as the branch sizes.
 */
export function demoBehaviorSpec(demo: DemoFile): DemoBehaviorSpec {
  const first = demo.records[0]?.agent_info;
  const observationShapes = (first?.observations ?? []).map((o) => Array.from(o.shape ?? []));
  const spec = demo.brainParameters.action_spec;
  const continuous = spec?.num_continuous_actions ?? 0;
  const discrete = spec?.num_discrete_actions ?? 0;
  if (continuous === 0 && discrete === 0) {
    const sizes = Array.from(demo.brainParameters.vector_action_size_deprecated ?? []);
    if (demo.brainParameters.vector_action_space_type_deprecated === SpaceTypeProto.continuous) {
      return { observationShapes, continuousSize: sizes[0] ?? 0, discreteBranches: [] };
    }
    return { observationShapes, continuousSize: 0, discreteBranches: sizes };
  }
  return { observationShapes, continuousSize: continuous, discreteBranches: Array.from(spec?.discrete_branch_sizes ?? []) };
}

// ---------------------------------------------------------------------------------------------
// Writing

export interface DemoWriterOptions {
  /** Stored in the meta. Unity's recorder keeps at most 16 characters (letters, digits, space, '-'). */
  demonstrationName: string;
  /** Written as given. Unity writes is_training false and the fully qualified behavior name. */
  brainParameters: BrainParametersProto;
}

/**
 * Writes a .demo file as Unity's DemonstrationWriter does: the meta (zero counts) and the brain
 * parameters on construction, one record per `record`, and on `close` the final meta appended
 * unprefixed after the records and rewritten length-prefixed at the start of the file.
 *
 * Messages are encoded as Unity's C# protobuf runtime encodes them: scalar fields holding their
 * proto3 default are left out even when set explicitly, so the bytes match.
 */
export class DemoWriter {
  private fd: number | undefined;
  private position: number;
  private steps = 0;
  private episodes = 0;
  /** Accumulated in single precision, as the C# float it mirrors. */
  private cumulativeReward = 0;
  private readonly demonstrationName: string;

  constructor(
    readonly filePath: string,
    options: DemoWriterOptions,
  ) {
    this.demonstrationName = options.demonstrationName;
    const initialMeta = this.metaBytes();
    if (1 + initialMeta.length > DEMO_META_AREA_BYTES) {
      throw new Error(
        `Demonstration name '${options.demonstrationName}' is too long for the ${DEMO_META_AREA_BYTES}-byte meta area ` +
          `(Unity's recorder keeps ${DEMO_NAME_MAX_LENGTH} characters at most).`,
      );
    }
    this.fd = fs.openSync(filePath, 'w');
    try {
      let at = this.writeAt(0, delimited(initialMeta));
      // Bytes between the meta and the brain parameters stay zero, as in a stream seeked past its end.
      if (at < DEMO_META_AREA_BYTES) at = this.writeAt(at, new Uint8Array(DEMO_META_AREA_BYTES - at));
      this.position = this.writeAt(DEMO_META_AREA_BYTES, delimited(encodeAsUnity('BrainParametersProto', options.brainParameters)));
    } catch (error) {
      fs.closeSync(this.fd);
      this.fd = undefined;
      throw error;
    }
  }

  /** Records written so far. */
  get numberSteps(): number {
    return this.steps;
  }

  /** Episodes counted so far: records flagged done (close adds the one in progress). */
  get numberEpisodes(): number {
    return this.episodes;
  }

  /** Append one step: counts it, adds its reward, and counts an episode when it is flagged done. */
  record(pair: AgentInfoActionPairProto): void {
    const fd = this.openFd('record');
    this.steps += 1;
    this.cumulativeReward = Math.fround(this.cumulativeReward + Math.fround(pair.agent_info?.reward ?? 0));
    if (pair.agent_info?.done) this.episodes += 1;
    this.position = this.writeAt(this.position, delimited(encodeAsUnity('AgentInfoActionPairProto', pair)), fd);
  }

  /** The meta as it will be written on close. */
  finalMeta(): DemonstrationMetaProto {
    const episodes = this.episodes + 1;
    return this.meta(this.steps, episodes, Math.fround(this.cumulativeReward / episodes));
  }

  /**
   * End the recording: the episode in progress counts as one more episode, the mean reward is the
   * reward sum over the episodes, and the final meta goes unprefixed after the records and
   * length-prefixed at the start of the file. Closing twice does nothing.
   */
  close(): void {
    if (this.fd === undefined) return;
    const fd = this.fd;
    try {
      this.episodes += 1;
      const finalMeta = this.meta(this.steps, this.episodes, Math.fround(this.cumulativeReward / this.episodes));
      const body = encodeAsUnity('DemonstrationMetaProto', finalMeta);
      const framed = delimited(body);
      if (framed.length > DEMO_META_AREA_BYTES) {
        throw new Error(
          `The final meta of ${this.filePath} takes ${framed.length} bytes, more than the ` +
            `${DEMO_META_AREA_BYTES}-byte meta area: shorten the demonstration name.`,
        );
      }
      this.position = this.writeAt(this.position, body, fd);
      this.writeAt(0, framed, fd);
    } finally {
      fs.closeSync(fd);
      this.fd = undefined;
    }
  }

  private meta(steps: number, episodes: number, meanReward: number): DemonstrationMetaProto {
    return {
      api_version: DEMONSTRATION_API_VERSION,
      demonstration_name: this.demonstrationName,
      number_steps: steps,
      number_episodes: episodes,
      mean_reward: meanReward,
    };
  }

  private metaBytes(): Uint8Array {
    return encodeAsUnity('DemonstrationMetaProto', this.meta(0, 0, 0));
  }

  private openFd(action: string): number {
    if (this.fd === undefined) throw new Error(`Cannot ${action}: the demonstration writer of ${this.filePath} is closed.`);
    return this.fd;
  }

  private writeAt(position: number, data: Uint8Array, fd = this.openFd('write')): number {
    let done = 0;
    while (done < data.length) {
      done += fs.writeSync(fd, data, done, data.length - done, position + done);
    }
    return position + data.length;
  }
}

/** A varint length prefix followed by the bytes (protobuf's writeDelimited). */
function delimited(body: Uint8Array): Uint8Array {
  const prefix = protobuf.Writer.create().uint32(body.length).finish();
  const out = new Uint8Array(prefix.length + body.length);
  out.set(prefix, 0);
  out.set(body, prefix.length);
  return out;
}

/** Encode a message with the field presence of Unity's C# protobuf runtime. */
export function encodeAsUnity(typeName: string, message: object): Uint8Array {
  const type = messageType(typeName);
  return type.encode(withoutDefaults(type, message)).finish();
}

/**
 * A copy of a message without the proto3 scalar fields that hold their default value (C# leaves
 * them off the wire; protobufjs writes whatever is set). Oneof members are kept when set: their
 * presence is explicit. Floats of -0 are kept, as C#'s bitwise comparison with 0 keeps them.
 */
function withoutDefaults(type: protobuf.Type, message: object): Record<string, unknown> {
  const source = message as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const field of type.fieldsArray) {
    const value = source[field.name];
    if (value === undefined || value === null) continue;
    if (field.repeated) {
      if ((value as ArrayLike<unknown>).length > 0) out[field.name] = value;
      continue;
    }
    if (field.partOf) {
      if (Object.prototype.hasOwnProperty.call(source, field.name)) out[field.name] = value;
      continue;
    }
    if (field.resolvedType instanceof protobuf.Type) {
      out[field.name] = withoutDefaults(field.resolvedType, value as object);
      continue;
    }
    if (isProto3Default(field, value)) continue;
    const enumType = field.resolvedType instanceof protobuf.Enum ? field.resolvedType : undefined;
    if (enumType !== undefined && typeof value === 'string') {
      const numeric = enumType.values[value];
      if (numeric === undefined) throw new Error(`${type.name}.${field.name}: unknown enum value '${value}'`);
      out[field.name] = numeric;
      continue;
    }
    out[field.name] = value;
  }
  return out;
}

function isProto3Default(field: protobuf.Field, value: unknown): boolean {
  if (typeof value === 'boolean') return !value;
  if (typeof value === 'string') {
    if (field.resolvedType instanceof protobuf.Enum) return field.resolvedType.values[value] === 0;
    return value.length === 0;
  }
  if (typeof value === 'number') {
    return field.type === 'float' || field.type === 'double' ? Object.is(value, 0) : value === 0;
  }
  if (value instanceof Uint8Array) return value.length === 0;
  return false;
}
