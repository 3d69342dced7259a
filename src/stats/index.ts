/** Everything the user sees of a run's statistics: console lines, TensorBoard files, run_logs/*.json. */
export * from './stats-reporter';
export * from './console-writer';
export * from './tensorboard-writer';
export * from './gauge-writer';
export * from './event-file';
export * from './tfrecord';
export * from './timers';
export * from './training-status';
export * from './python-format';
export * from './environment-status';
