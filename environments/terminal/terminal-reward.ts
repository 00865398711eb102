// The terminal reward (spec 10.1): accuracy = passed / total unit tests, reward = 2·accuracy − 1, so all
// tests passing gives +1, none (or no test results at all) −1, and partial solutions land in between.

export function terminalReward(passed: number, total: number): number {
  if (total <= 0) return -1;
  return (2 * passed) / total - 1;
}
