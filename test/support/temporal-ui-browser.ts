// The Temporal Web UI driven as a person drives it: a headless Chromium (Debian's, through puppeteer-core), the UI's
// own Start Workflow form, screenshots kept under test-artifacts/ to look at after a run.
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';

/** What the functions run in the page use of its DOM (this project's type check has no DOM library). */
interface PageGlobals {
  document: {
    body: { innerText: string };
    querySelector(selector: string): { disabled: boolean } | null;
  };
}

export const artifactsDir = fileURLToPath(new URL('../../test-artifacts/', import.meta.url));

export async function launchBrowser(): Promise<Browser> {
  const executablePath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
  if (!existsSync(executablePath))
    throw new Error(
      `no browser at ${executablePath}: apt-get install chromium (Debian's), or set CHROMIUM_PATH`,
    );
  return puppeteer.launch({
    executablePath,
    headless: true,
    // Chromium's sandbox refuses to run as root (CI runs as root).
    args: process.getuid?.() === 0 ? ['--no-sandbox'] : [],
  });
}

export async function newUiPage(browser: Browser): Promise<Page> {
  const page = await browser.newPage();
  await page.setViewport({ width: 1400, height: 1000 });
  return page;
}

function sameJson(a: string, b: string): boolean {
  return a.replace(/\s/g, '') === b.replace(/\s/g, '');
}

/** `test-artifacts/temporal-ui-<name>.png`, the whole page. */
export async function screenshot(page: Page, name: string): Promise<string> {
  mkdirSync(artifactsDir, { recursive: true });
  const path = join(artifactsDir, `temporal-ui-${name}.png`);
  await page.screenshot({ path: path as `${string}.png`, fullPage: true });
  return path;
}

export interface StartWorkflowForm {
  workflowId: string;
  taskQueue: string;
  workflowType: string;
  /** Typed into the input editor as it stands. */
  input: string;
}

/**
 * Fills the UI's Start Workflow form (`<ui>/namespaces/<ns>/workflows/start-workflow`) and presses Start
 * Workflow; resolves once the UI's own start request was answered (its HTTP status). `shot`: a screenshot
 * name for the filled form.
 */
export async function startWorkflowInUi(
  page: Page,
  uiUrl: string,
  form: StartWorkflowForm,
  options: { namespace?: string; shot?: string } = {},
): Promise<number> {
  const namespace = options.namespace ?? 'default';
  await page.goto(`${uiUrl}/namespaces/${namespace}/workflows/start-workflow`, { waitUntil: 'networkidle0' });
  await page.waitForSelector('#workflowId');
  await page.type('#workflowId', form.workflowId);
  await page.type('#taskQueue', form.taskQueue);
  await page.type('#workflowType', form.workflowType);
  // The input is a CodeMirror editor, read-only until the form above it is filled: wait until it takes text,
  // focus it and insert the text in one go (typed key by key, its bracket closing would add a second `}`).
  await page.waitForFunction(() => {
    const { document } = globalThis as unknown as PageGlobals;
    return document.querySelector('.cm-content[contenteditable=true]') !== null;
  });
  let typed = '';
  for (let attempt = 0; attempt < 3 && !sameJson(typed, form.input); attempt++) {
    await page.click('.cm-content');
    await page.keyboard.down('Control');
    await page.keyboard.press('KeyA');
    await page.keyboard.up('Control');
    await page.keyboard.sendCharacter(form.input);
    typed = await page.$eval('.cm-content', (editor) => editor.textContent ?? '');
  }
  if (!sameJson(typed, form.input))
    throw new Error(`the input editor holds ${JSON.stringify(typed)}, not the input typed`);
  // Leaving the editor reformats the JSON and moves the button: leave it before aiming at the button, as a
  // pointer does on its way there.
  await page.click('h1');
  await page.waitForFunction(() => {
    const { document } = globalThis as unknown as PageGlobals;
    const button = document.querySelector('[data-testid=start-workflow-button]');
    return button !== null && !button.disabled;
  });
  await new Promise((resolve) => setTimeout(resolve, 500));
  if (options.shot) await screenshot(page, options.shot);
  const answered = page.waitForResponse(
    (response) =>
      response.request().method() === 'POST' &&
      response
        .url()
        .includes(`/api/v1/namespaces/${namespace}/workflows/${encodeURIComponent(form.workflowId)}`),
    { timeout: 30_000 },
  );
  await page.click('[data-testid=start-workflow-button]');
  return (await answered).status();
}

/** The workflow's page in the UI; resolves once its text contains every one of `texts` (in any case). */
export async function openWorkflowPage(
  page: Page,
  uiUrl: string,
  workflowId: string,
  texts: string[],
  options: { namespace?: string; timeoutMs?: number } = {},
): Promise<string> {
  const namespace = options.namespace ?? 'default';
  const url = `${uiUrl}/namespaces/${namespace}/workflows/${encodeURIComponent(workflowId)}`;
  const shows = (wanted: string[]) => {
    // biome-ignore lint/performance/useDomNodeTextContent: the text a person sees, not hidden nodes'
    const shown = (globalThis as unknown as PageGlobals).document.body.innerText.toLowerCase();
    return wanted.every((text) => shown.includes(text.toLowerCase()));
  };
  // A running workflow's page keeps polling (never idle): wait for what it shows instead. On a busy machine
  // the page can come up blank; a person reloads it, and so does this, once.
  for (let attempt = 1; ; attempt++) {
    try {
      await page.goto(url, { waitUntil: 'domcontentloaded' });
      await page.waitForFunction(shows, { timeout: options.timeoutMs ?? 30_000 }, texts);
      return await pageText(page);
    } catch (error) {
      if (attempt < 2) continue;
      const shown = await pageText(page).catch((e: Error) => `(unreadable: ${e.message})`);
      throw new Error(
        `the workflow page never showed ${JSON.stringify(texts)} (${(error as Error).message}); it shows:\n${shown.slice(0, 3000)}`,
      );
    }
  }
}

/** The page's text as a person sees it. */
export function pageText(page: Page): Promise<string> {
  // biome-ignore lint/performance/useDomNodeTextContent: the text a person sees, not hidden nodes'
  return page.evaluate(() => (globalThis as unknown as PageGlobals).document.body.innerText);
}
