/**
 * The environment parameters of a run and their curricula (upstream's
 * EnvironmentParameterManager): which lesson each parameter is in, the sampler the environments
 * must use now, and when a lesson is complete. The lesson numbers live in the run's
 * TrainingStatus (training_status.json), so --resume goes on from the lessons reached.
 */
import type { Logger } from '../common/logger';
import type { CompletionCriteriaSettings, EnvironmentParameterSettings, Lesson, SamplerSettings } from '../config/settings';
import { StatusType, TrainingStatus, floatRepr } from '../stats';

/** The sampler seed that means "none given": the run's seed is used instead. */
const UNSET_SEED = -1;

/** What the manager reads of a behavior's trainer to judge its lessons. */
export interface CurriculumProgress {
  readonly step: number;
  readonly maxSteps: number;
  /** The rewards of the latest finished episodes, oldest first. */
  readonly episodeRewards: readonly number[];
}

export interface LessonUpdate {
  /** At least one parameter moved to its next lesson. */
  readonly updated: boolean;
  /** One of the finished lessons asks for the environments to reset (require_reset). */
  readonly mustReset: boolean;
}

/**
 * Upstream's CompletionCriteriaSettings.need_increment: whether the lesson is complete given the
 * behavior's progress (step / max_steps) and its reward buffer, and the new smoothed reward.
 * The reward measure compares the mean of the buffer, blended 1/4 with the previous smoothed value
 * when signal_smoothing is on; nothing completes before min_lesson_length episodes.
 */
export function needIncrement(
  criteria: CompletionCriteriaSettings,
  progress: number,
  rewardBuffer: readonly number[],
  smoothing: number,
): { increment: boolean; smoothing: number } {
  if (rewardBuffer.length < criteria.min_lesson_length) return { increment: false, smoothing };
  if (criteria.measure === 'progress') return { increment: progress > criteria.threshold, smoothing };
  if (rewardBuffer.length === 0) return { increment: false, smoothing };
  let measure = rewardBuffer.reduce((sum, r) => sum + r, 0) / rewardBuffer.length;
  if (Number.isNaN(measure)) return { increment: false, smoothing };
  if (criteria.signal_smoothing) {
    measure = 0.25 * smoothing + 0.75 * measure;
    smoothing = measure;
  }
  return { increment: measure > criteria.threshold, smoothing };
}

/** A sampler as upstream's __str__ prints it in the lesson log lines. */
export function describeSampler(sampler: SamplerSettings): string {
  switch (sampler.sampler_type) {
    case 'constant':
      return `Float: value=${floatRepr(sampler.sampler_parameters.value)}`;
    case 'uniform': {
      const p = sampler.sampler_parameters;
      return `Uniform sampler: min=${floatRepr(p.min_value)}, max=${floatRepr(p.max_value)}`;
    }
    case 'gaussian': {
      const p = sampler.sampler_parameters;
      return `Gaussian sampler: mean=${floatRepr(p.mean)}, stddev=${floatRepr(p.st_dev)}`;
    }
    case 'multirangeuniform': {
      const intervals = sampler.sampler_parameters.intervals.map(([min, max]) => `(${floatRepr(min)}, ${floatRepr(max)})`);
      return `MultiRangeUniform sampler: intervals=[${intervals.join(', ')}]`;
    }
  }
}

export class EnvironmentParameterManager {
  /** Per parameter its lessons, with every unset sampler seed replaced by a run-derived one. */
  private readonly curricula: ReadonlyMap<string, readonly Lesson[]>;
  /** Per parameter, the smoothed reward of its reward measure. */
  private readonly smoothedRewards = new Map<string, number>();

  /**
   * `restore` (--resume) keeps the lesson numbers found in `status`; otherwise every parameter
   * starts at lesson 0. As upstream, the k-th sampler without a seed gets `runSeed + k`.
   */
  constructor(
    settings: Readonly<Record<string, EnvironmentParameterSettings>> | null,
    runSeed: number,
    restore: boolean,
    private readonly status: TrainingStatus,
    private readonly logger: Logger,
  ) {
    let offset = 0;
    const curricula = new Map<string, Lesson[]>();
    for (const [name, parameter] of Object.entries(settings ?? {})) {
      const lessons = parameter.curriculum.map((lesson) => {
        if (lesson.value.sampler_parameters.seed !== UNSET_SEED) return lesson;
        const seeded = { ...lesson.value.sampler_parameters, seed: runSeed + offset++ };
        return { ...lesson, value: { ...lesson.value, sampler_parameters: seeded } as SamplerSettings };
      });
      curricula.set(name, lessons);
      const saved = status.getParameterState(name, StatusType.LESSON_NUM);
      const restored = typeof saved === 'number' && saved >= 0 && saved < lessons.length;
      if (!restore || !restored) status.setParameterState(name, StatusType.LESSON_NUM, 0);
      this.smoothedRewards.set(name, 0);
    }
    this.curricula = curricula;
  }

  /**
   * How many recent episode rewards a behavior's completion criteria look at: the largest
   * min_lesson_length of the lessons that watch it, at least 1 (upstream's reward buffer length).
   */
  minimumRewardBufferSize(behaviorName: string): number {
    let size = 1;
    for (const lessons of this.curricula.values()) {
      for (const { completion_criteria: criteria } of lessons) {
        if (criteria !== null && criteria.behavior === behaviorName) size = Math.max(size, criteria.min_lesson_length);
      }
    }
    return size;
  }

  /** Per parameter, the lesson it is in (0 for a plain sampler). */
  currentLessonNumbers(): Map<string, number> {
    return new Map([...this.curricula.keys()].map((name) => [name, this.lessonNumber(name)]));
  }

  /** Per parameter, the sampler of its current lesson: what the environments must use. */
  currentSamplers(): Record<string, SamplerSettings> {
    const samplers: Record<string, SamplerSettings> = {};
    for (const [name, lessons] of this.curricula) samplers[name] = lessons[this.lessonNumber(name)].value;
    return samplers;
  }

  /** Logs each parameter's lesson and value, in upstream's words. */
  logCurrentLessons(): void {
    for (const name of this.curricula.keys()) this.logLesson(name);
  }

  /**
   * Moves every parameter whose lesson is complete to its next lesson, judging each lesson by its
   * behavior's trainer (behaviors without a trainer yet are skipped). The last lesson never ends.
   */
  updateLessons(trainers: ReadonlyMap<string, CurriculumProgress>): LessonUpdate {
    let updated = false;
    let mustReset = false;
    for (const [name, lessons] of this.curricula) {
      const lessonNumber = this.lessonNumber(name);
      const criteria = lessons[lessonNumber].completion_criteria;
      if (criteria === null || lessonNumber + 1 >= lessons.length) continue;
      const trainer = trainers.get(criteria.behavior);
      if (trainer === undefined) continue;
      const recentRewards = trainer.episodeRewards.slice(-this.minimumRewardBufferSize(criteria.behavior));
      const { increment, smoothing } = needIncrement(
        criteria,
        trainer.step / trainer.maxSteps,
        recentRewards,
        this.smoothedRewards.get(name)!,
      );
      this.smoothedRewards.set(name, smoothing);
      if (!increment) continue;
      this.status.setParameterState(name, StatusType.LESSON_NUM, lessonNumber + 1);
      this.logLesson(name);
      updated = true;
      if (criteria.require_reset) mustReset = true;
    }
    return { updated, mustReset };
  }

  private lessonNumber(name: string): number {
    return this.status.getParameterState(name, StatusType.LESSON_NUM) as number;
  }

  private logLesson(name: string): void {
    const lesson = this.curricula.get(name)![this.lessonNumber(name)];
    this.logger.info(`Parameter '${name}' is in lesson '${lesson.name}' and has value '${describeSampler(lesson.value)}'.`);
  }
}
