export function createHarnessActivities() {
  return {
    async shout(text: string): Promise<string> {
      return `${text.toUpperCase()}!`;
    },
  };
}

export type HarnessActivities = ReturnType<typeof createHarnessActivities>;
