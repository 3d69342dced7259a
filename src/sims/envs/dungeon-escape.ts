#!/usr/bin/env node
/**
 * DungeonEscape, a small grid version of Unity's Dungeon Escape (Examples/DungeonEscape:
 * DungeonEscapeEnvController.cs, PushAgentEscape.cs): a cooperative game whose reward the group
 * earns only together, and only if one of its members gives itself up.
 *
 * Each training area is a square room of `--size` by `--size` cells (5 by default) holding a group
 * of `--group-size` agents (3, as Unity's scene), a dragon and a locked door. An agent that steps
 * onto the dragon is eaten: it leaves the game for the rest of the group's episode (its own episode
 * ends, a true end, and it asks for no decision until the group starts again) and the dragon
 * vanishes, dropping a key on its cell. An agent that steps onto the key carries it; the carrier
 * that steps onto the door opens it: the group reward +1, and the episode of every member left ends.
 * Every step also costs the group -0.5 / MaxEnvironmentSteps (the time penalty of Unity's
 * Cooperative Push Block), and after MaxEnvironmentSteps steps the group's episode is interrupted.
 * All rewards are group rewards, given to the members still in the game; no agent earns anything
 * of its own. So the eaten agent's sacrifice pays only through its groupmates, which a critic over
 * the group (POCA) can credit it for and an agent's own returns (independent PPO) cannot.
 *
 * What it keeps of Unity's example: the group of three with one SimpleMultiAgentGroup, the eaten
 * agent leaving the group, the key dropped where the dragon was, the door opened by the carrier
 * for +1 and the group episode's end, the interruption after MaxEnvironmentSteps, the room's
 * random quarter turn (here: the door in the middle of a side drawn each episode) and random
 * spawns, the "I have a key" observation. What it changes: a grid instead of physics (one
 * discrete branch of 5: 0 stay, 1 up (+y), 2 down, 3 left (-x), 4 right; walls stop a move, agents
 * may share a cell); vector observations of the whole room instead of ray sensors; the dragon
 * stands still instead of walking to a portal (no failure by its escape, no hazards); the time
 * penalty is added; a decision every step.
 *
 * Observations (one vector, 11 + 4 x (group size - 1) floats; positions and offsets in cells over
 * size - 1):
 *   own position x, y (each from -1 to 1); holds the key (0 or 1);
 *   dragon: present (0 or 1), then its offset from the agent dx, dy (0 when gone);
 *   key: lying in the room (0 or 1), then its offset dx, dy (0 when not lying there);
 *   door: offset dx, dy;
 *   each groupmate, in the group's order: in the game (0 or 1), offset dx, dy, holds the key
 *   (all 0 once eaten).
 * The environment also records, once per group episode, `DungeonEscape/Group Reward` (the group
 * rewards of that episode summed) and `DungeonEscape/Escaped` (1 when the door was opened) on the
 * stats channel, the same figures whichever trainer drives it.
 */
import { Academy } from '../sdk/academy';
import { ActionBuffers, Agent, ObservationWriter, PausableBehavior } from '../sdk/agent';
import { SimDefinition, SimOptionValues, intOption, runEnvironmentMain } from '../sdk/run-environment';

export const STAY = 0;
export const UP = 1;
export const DOWN = 2;
export const LEFT = 3;
export const RIGHT = 4;
const MOVES: ReadonlyArray<readonly [number, number]> = [
  [0, 0],
  [0, 1],
  [0, -1],
  [-1, 0],
  [1, 0],
];

export const DEFAULT_SIZE = 5;
export const DEFAULT_GROUP_SIZE = 3;
export const DEFAULT_MAX_ENVIRONMENT_STEPS = 50;
const DEFAULT_AREAS = 8;
export const UNLOCK_REWARD = 1;
/** Cooperative Push Block's time penalty: -0.5 over a whole episode. */
export const EPISODE_TIME_PENALTY = 0.5;
export const BEHAVIOR_NAME = 'DungeonEscape';
export const GROUP_REWARD_STAT = 'DungeonEscape/Group Reward';
export const ESCAPED_STAT = 'DungeonEscape/Escaped';

export interface Cell {
  x: number;
  y: number;
}

export function observationSize(groupSize: number): number {
  return 11 + 4 * (groupSize - 1);
}

function sameCell(a: Cell, b: Cell): boolean {
  return a.x === b.x && a.y === b.y;
}

function distance(a: Cell, b: Cell): number {
  return Math.abs(a.x - b.x) + Math.abs(a.y - b.y);
}

/** The dungeon of one training area: its room, its group and what happens in it (Unity's env controller). */
export class Dungeon {
  readonly members: EscapeAgent[] = [];
  door: Cell = { x: 0, y: 0 };
  /** null once the dragon has eaten. */
  dragon: Cell | null = null;
  /** Where the key lies; null before the dragon drops it and once it is carried. */
  key: Cell | null = null;
  /** Steps since the group's episode began (Unity's m_ResetTimer). */
  steps = 0;
  /** The group rewards given in this group episode, summed. */
  groupReward = 0;
  /** The members whose episode the group's end closed and who have not begun their next one yet. */
  private readonly ending = new Set<EscapeAgent>();

  constructor(
    readonly id: number,
    readonly size: number,
    readonly groupSize: number,
    readonly maxEnvironmentSteps: number,
    private readonly academy: Academy,
  ) {}

  join(agent: EscapeAgent): void {
    this.members.push(agent);
  }

  /** Draws a new episode: the door on a side drawn at random, then the members and the dragon on distinct free cells. */
  resetScene(): void {
    const random = this.academy.random;
    const middle = Math.floor(this.size / 2);
    const last = this.size - 1;
    const sides: Cell[] = [
      { x: middle, y: last },
      { x: last, y: middle },
      { x: middle, y: 0 },
      { x: 0, y: middle },
    ];
    this.door = sides[random.int(4)];
    const taken: Cell[] = [this.door];
    const freeCell = (): Cell => {
      for (;;) {
        const cell = { x: random.int(this.size), y: random.int(this.size) };
        if (!taken.some((t) => sameCell(t, cell))) {
          taken.push(cell);
          return cell;
        }
      }
    };
    for (const member of this.members) member.enter(freeCell());
    this.dragon = freeCell();
    this.key = null;
    this.steps = 0;
    this.groupReward = 0;
    this.ending.clear();
  }

  /** The members still in the game. */
  present(): EscapeAgent[] {
    return this.members.filter((m) => m.inGame);
  }

  /**
   * One world step, after every member chose its move: the time penalty, then the members move in
   * the group's order, each meeting what is on its new cell at once; then the step limit.
   */
  step(): void {
    this.giveGroupReward(-EPISODE_TIME_PENALTY / this.maxEnvironmentSteps);
    for (const member of this.present()) {
      member.position = this.moved(member.position, member.nextMove);
      if (this.dragon !== null && sameCell(member.position, this.dragon)) {
        this.key = this.dragon;
        this.dragon = null;
        member.eaten();
      } else if (this.key !== null && sameCell(member.position, this.key)) {
        member.hasKey = true;
        this.key = null;
      }
      if (member.inGame && member.hasKey && sameCell(member.position, this.door)) {
        this.giveGroupReward(UNLOCK_REWARD);
        this.endGroupEpisode(true);
        return;
      }
    }
    this.steps += 1;
    if (this.steps >= this.maxEnvironmentSteps) this.endGroupEpisode(false);
  }

  private moved(from: Cell, move: number): Cell {
    const [dx, dy] = MOVES[move];
    const clamp = (v: number) => Math.max(0, Math.min(this.size - 1, v));
    return { x: clamp(from.x + dx), y: clamp(from.y + dy) };
  }

  /** As a SimpleMultiAgentGroup's AddGroupReward: every member still registered receives it. */
  private giveGroupReward(value: number): void {
    for (const member of this.present()) member.addGroupReward(value);
    this.groupReward += value;
  }

  /**
   * Ends the episode of every member left: a true end when the door opened, an interruption at the
   * step limit. The room is drawn anew once they have all reported their last step (see begin).
   */
  private endGroupEpisode(escaped: boolean): void {
    for (const member of this.present()) {
      if (escaped) member.endEpisode();
      else member.episodeInterrupted();
      this.ending.add(member);
    }
    this.academy.stats.add(GROUP_REWARD_STAT, this.groupReward);
    this.academy.stats.add(ESCAPED_STAT, escaped ? 1 : 0);
  }

  /**
   * A member's next episode begins. The Academy reports each ending agent's last step and then
   * begins its next episode, one agent after the other; the room is drawn anew only after the
   * last of the group's end began, so that every last step shows the room as the game ended.
   */
  begin(agent: EscapeAgent): void {
    if (!this.ending.delete(agent) || this.ending.size > 0) return;
    this.resetScene();
  }
}

export class EscapeAgent extends Agent {
  position: Cell = { x: 0, y: 0 };
  hasKey = false;
  /** False once eaten, until the group's next episode. */
  inGame = true;
  /** The move chosen at the last decision, made when the world steps. */
  nextMove = STAY;
  private readonly decisions: PausableBehavior;

  constructor(readonly dungeon: Dungeon) {
    const size = observationSize(dungeon.groupSize);
    const behavior = new PausableBehavior(BEHAVIOR_NAME, [{ kind: 'vector', shape: [size], name: `VectorSensor_size${size}` }], 0, [MOVES.length]);
    super(behavior);
    this.decisions = behavior;
    this.groupId = dungeon.id;
    dungeon.join(this);
  }

  /** Back in the room at `cell`, empty-handed, asking for decisions. */
  enter(cell: Cell): void {
    this.position = cell;
    this.hasKey = false;
    this.inGame = true;
    this.nextMove = STAY;
    this.decisions.paused = false;
  }

  /** Leaves the game until the group's next episode: a true end of its own episode, then no more decisions. */
  eaten(): void {
    this.inGame = false;
    this.hasKey = false;
    this.decisions.paused = true;
    this.endEpisode();
  }

  override onEpisodeBegin(): void {
    this.dungeon.begin(this);
  }

  override collectObservations(_index: number, writer: ObservationWriter): void {
    const d = this.dungeon;
    const scale = d.size - 1;
    const offset = (cell: Cell) => {
      writer.add((cell.x - this.position.x) / scale);
      writer.add((cell.y - this.position.y) / scale);
    };
    const optional = (cell: Cell | null) => {
      writer.add(cell === null ? 0 : 1);
      if (cell === null) {
        writer.add(0);
        writer.add(0);
      } else {
        offset(cell);
      }
    };
    writer.add((2 * this.position.x) / scale - 1);
    writer.add((2 * this.position.y) / scale - 1);
    writer.add(this.hasKey ? 1 : 0);
    optional(d.dragon);
    optional(d.key);
    offset(d.door);
    for (const mate of d.members) {
      if (mate === this) continue;
      if (!mate.inGame) {
        for (let i = 0; i < 4; i++) writer.add(0);
        continue;
      }
      optional(mate.position);
      writer.add(mate.hasKey ? 1 : 0);
    }
  }

  override onActionReceived(actions: ActionBuffers): void {
    this.nextMove = actions.discrete[0];
  }

  /**
   * The plan that always escapes: while the dragon stands, the member nearest to it (the first in
   * the group's order among equals) walks into it and the others wait; then the member nearest to
   * the key fetches it, and the carrier walks to the door.
   */
  override heuristic(actionsOut: ActionBuffers): void {
    const d = this.dungeon;
    const nearestTo = (cell: Cell) =>
      d.present().reduce((best, m) => (distance(m.position, cell) < distance(best.position, cell) ? m : best));
    let target: Cell | null = null;
    if (this.hasKey) target = d.door;
    else if (d.dragon !== null && nearestTo(d.dragon) === this) target = d.dragon;
    else if (d.key !== null && nearestTo(d.key) === this) target = d.key;
    actionsOut.discrete[0] = target === null ? STAY : this.stepToward(target);
  }

  /** The move that closes the larger of the two gaps to `target` (x first among equals). */
  private stepToward(target: Cell): number {
    const dx = target.x - this.position.x;
    const dy = target.y - this.position.y;
    if (dx === 0 && dy === 0) return STAY;
    if (Math.abs(dx) >= Math.abs(dy)) return dx > 0 ? RIGHT : LEFT;
    return dy > 0 ? UP : DOWN;
  }
}

export const DUNGEON_ESCAPE: SimDefinition = {
  name: 'DungeonEscape',
  description: "a group must feed one of its own to the dragon to get the key that opens the door (Unity's Dungeon Escape, on a grid)",
  options: {
    areas: { type: 'string', default: String(DEFAULT_AREAS), description: 'training areas, each a room with its own group' },
    size: { type: 'string', default: String(DEFAULT_SIZE), description: 'cells along each side of the room, 3 or more' },
    'group-size': { type: 'string', default: String(DEFAULT_GROUP_SIZE), description: 'agents in each group, 2 or more' },
    'max-environment-steps': {
      type: 'string',
      default: String(DEFAULT_MAX_ENVIRONMENT_STEPS),
      description: "steps before the group's episode is interrupted (Unity's MaxEnvironmentSteps)",
    },
  },
  create(academy: Academy, options: SimOptionValues, numAreas: number): void {
    const size = intOption(options, 'size');
    if (size < 3) throw new Error(`--size needs an integer of at least 3 (a door in the middle of a side), got ${size}.`);
    const groupSize = intOption(options, 'group-size');
    if (groupSize < 2) throw new Error(`--group-size needs an integer of at least 2 (one to be eaten, one to open the door), got ${groupSize}.`);
    if (groupSize + 2 > size * size) throw new Error(`--group-size ${groupSize} does not fit a room of ${size} by ${size} beside the dragon and the door.`);
    const maxSteps = intOption(options, 'max-environment-steps');
    if (maxSteps < 1) throw new Error(`--max-environment-steps needs an integer of at least 1, got ${maxSteps}.`);
    const dungeons: Dungeon[] = [];
    const areas = intOption(options, 'areas') * numAreas;
    for (let area = 0; area < areas; area++) {
      const dungeon = new Dungeon(area + 1, size, groupSize, maxSteps, academy);
      for (let i = 0; i < groupSize; i++) academy.addAgent(new EscapeAgent(dungeon));
      dungeons.push(dungeon);
    }
    const previousReset = academy.onReset;
    academy.onReset = () => {
      previousReset?.();
      for (const dungeon of dungeons) dungeon.resetScene();
    };
    const previousStep = academy.onWorldStep;
    academy.onWorldStep = (deltaTime) => {
      previousStep?.(deltaTime);
      for (const dungeon of dungeons) dungeon.step();
    };
  },
};

if (require.main === module) {
  runEnvironmentMain(DUNGEON_ESCAPE, process.argv.slice(2)).then((code) => process.exit(code));
}
