/**
 * SAC's continuous action distribution (upstream's TanhGaussianDistInstance with a
 * conditional sigma, torch_entities/distributions.py): a Gaussian whose mean and log standard
 * deviation both come from the actor's body, squashed by tanh into (-1, 1). The log probability
 * of a squashed action is the Gaussian's at the unsquashed sample minus log |d tanh(u) / du|,
 * computed from the unsquashed sample itself (torch's TanhTransform with its one-value cache).
 */
import { gaussianLogProb } from './distributions';

/** The clamp upstream applies to the log_sigma head's output. */
export const LOG_SIGMA_MIN = -20;
export const LOG_SIGMA_MAX = 2;

export function clampLogSigma(logSigma: number): number {
  return logSigma < LOG_SIGMA_MIN ? LOG_SIGMA_MIN : logSigma > LOG_SIGMA_MAX ? LOG_SIGMA_MAX : logSigma;
}

/** log(1 + e^x), without overflow for large x. */
export function softplus(x: number): number {
  return x > 0 ? x + Math.log1p(Math.exp(-x)) : Math.log1p(Math.exp(x));
}

/** log |d tanh(u) / du| = log(1 - tanh(u)^2), in torch's stable form 2 (log 2 - u - softplus(-2u)). */
export function tanhLogDetJacobian(unsquashed: number): number {
  return 2 * (Math.LN2 - unsquashed - softplus(-2 * unsquashed));
}

/** log p(tanh(u)) for the unsquashed sample u of N(mean, exp(logStd)^2). */
export function squashedGaussianLogProb(unsquashed: number, mean: number, logStd: number): number {
  return gaussianLogProb(unsquashed, mean, logStd) - tanhLogDetJacobian(unsquashed);
}
