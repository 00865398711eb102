// The one tool of the gui kind, `computer_use`, with the action vocabulary of the original's Qwen3-VL agent
// (spec 10.2): key, type, mouse_move, left_click, left_click_drag, right_click, middle_click, double_click,
// triple_click, scroll, hscroll, wait, terminate. Coordinates are in a 1000×1000 space relative to the screen,
// mapped here to pixels; each action becomes one xdotool command line (run in the container on DISPLAY :0).

import { z } from 'zod';
import type { ToolSchema } from '../environment.js';
import type { ScreenSize } from './gui-config.js';

export const COMPUTER_USE_TOOL_NAME = 'computer_use';

/** The relative coordinate space of the tool: 0..1000 on both axes, whatever the screen size. */
export const RELATIVE_SPACE = 1000;

const ACTIONS = [
  'key',
  'type',
  'mouse_move',
  'left_click',
  'left_click_drag',
  'right_click',
  'middle_click',
  'double_click',
  'triple_click',
  'scroll',
  'hscroll',
  'wait',
  'terminate',
] as const;

export const COMPUTER_USE_TOOL: ToolSchema = {
  type: 'function',
  function: {
    name: COMPUTER_USE_TOOL_NAME,
    description:
      'Use a mouse and keyboard to interact with the computer, and take a screenshot afterwards.\n' +
      `* The screen's coordinates are relative: (0, 0) is the top-left corner and (${RELATIVE_SPACE}, ${RELATIVE_SPACE}) the bottom-right one, whatever the resolution.\n` +
      '* Click on the middle of an element, not on its edge. Some applications take a moment to start or react: wait and look at the next screenshot.\n' +
      '* Call terminate with status "success" when the task is done, or "failure" when it cannot be done.',
    parameters: {
      type: 'object',
      properties: {
        action: {
          type: 'string',
          enum: [...ACTIONS],
          description:
            'key: press keys together (e.g. ["ctrl", "s"]). type: type a string. mouse_move: move the pointer. ' +
            'left_click, right_click, middle_click, double_click, triple_click: click at coordinate (or where the ' +
            'pointer is). left_click_drag: press the left button where the pointer is and release it at ' +
            'coordinate. scroll / hscroll: turn the wheel by pixels clicks (positive: up / right). wait: wait ' +
            'time seconds. terminate: end the task with status.',
        },
        keys: { type: 'array', items: { type: 'string' }, description: 'Keys for action=key.' },
        text: { type: 'string', description: 'Text for action=type.' },
        coordinate: {
          type: 'array',
          items: { type: 'number' },
          minItems: 2,
          maxItems: 2,
          description: `[x, y] in the relative 0..${RELATIVE_SPACE} space.`,
        },
        pixels: { type: 'number', description: 'Wheel clicks for scroll and hscroll.' },
        time: { type: 'number', description: 'Seconds for action=wait.' },
        status: { type: 'string', enum: ['success', 'failure'], description: 'For action=terminate.' },
      },
      required: ['action'],
    },
  },
};

const coordinate = z.tuple([z.number().finite(), z.number().finite()]);
const clickAction = <A extends string>(action: A) =>
  z.object({ action: z.literal(action), coordinate: coordinate.optional() });

export const computerUseActionSchema = z.discriminatedUnion('action', [
  z.object({ action: z.literal('key'), keys: z.array(z.string().min(1)).min(1) }),
  z.object({ action: z.literal('type'), text: z.string().min(1) }),
  z.object({ action: z.literal('mouse_move'), coordinate }),
  clickAction('left_click'),
  clickAction('right_click'),
  clickAction('middle_click'),
  clickAction('double_click'),
  clickAction('triple_click'),
  z.object({ action: z.literal('left_click_drag'), coordinate, start_coordinate: coordinate.optional() }),
  z.object({ action: z.literal('scroll'), pixels: z.number().int(), coordinate: coordinate.optional() }),
  z.object({ action: z.literal('hscroll'), pixels: z.number().int(), coordinate: coordinate.optional() }),
  z.object({ action: z.literal('wait'), time: z.number().min(0).default(1) }),
  z.object({ action: z.literal('terminate'), status: z.enum(['success', 'failure']) }),
]);

export type ComputerUseAction = z.infer<typeof computerUseActionSchema>;

/** The action of a call's arguments, or the reason it is not one (shown to the policy). */
export function parseComputerUseAction(
  args: Record<string, unknown>,
): { ok: true; action: ComputerUseAction } | { ok: false; error: string } {
  const parsed = computerUseActionSchema.safeParse(args);
  if (parsed.success) return { ok: true, action: parsed.data };
  const issue = parsed.error.issues[0];
  const where = issue && issue.path.length > 0 ? `${issue.path.join('.')}: ` : '';
  return { ok: false, error: `invalid computer_use arguments: ${where}${issue?.message ?? 'invalid'}` };
}

/** A relative (0..1000) point as a screen pixel, clamped onto the screen. */
export function toPixel([x, y]: readonly [number, number], screen: ScreenSize): [number, number] {
  const scale = (value: number, size: number) =>
    Math.min(size - 1, Math.max(0, Math.round((value / RELATIVE_SPACE) * size)));
  return [scale(x, screen.width), scale(y, screen.height)];
}

/** Wheel clicks at most per scroll action, so one call cannot keep the desktop busy for minutes. */
export const MAX_SCROLL_CLICKS = 50;

const KEY_NAMES: Record<string, string> = {
  ctrl: 'ctrl',
  control: 'ctrl',
  alt: 'alt',
  shift: 'shift',
  cmd: 'super',
  command: 'super',
  win: 'super',
  super: 'super',
  meta: 'super',
  enter: 'Return',
  return: 'Return',
  esc: 'Escape',
  escape: 'Escape',
  tab: 'Tab',
  backspace: 'BackSpace',
  delete: 'Delete',
  del: 'Delete',
  insert: 'Insert',
  space: 'space',
  up: 'Up',
  down: 'Down',
  left: 'Left',
  right: 'Right',
  arrowup: 'Up',
  arrowdown: 'Down',
  arrowleft: 'Left',
  arrowright: 'Right',
  home: 'Home',
  end: 'End',
  pageup: 'Prior',
  pagedown: 'Next',
  pgup: 'Prior',
  pgdn: 'Next',
  capslock: 'Caps_Lock',
  printscreen: 'Print',
  ' ': 'space',
  '+': 'plus',
  '-': 'minus',
  '=': 'equal',
  '/': 'slash',
  '\\': 'backslash',
  '.': 'period',
  ',': 'comma',
  ';': 'semicolon',
  "'": 'apostrophe',
  '`': 'grave',
  '[': 'bracketleft',
  ']': 'bracketright',
  '*': 'asterisk',
  '&': 'ampersand',
  '!': 'exclam',
  '?': 'question',
  '#': 'numbersign',
  $: 'dollar',
  '%': 'percent',
  '(': 'parenleft',
  ')': 'parenright',
  _: 'underscore',
  ':': 'colon',
  '"': 'quotedbl',
  '<': 'less',
  '>': 'greater',
  '@': 'at',
  '^': 'asciicircum',
  '~': 'asciitilde',
  '|': 'bar',
  '{': 'braceleft',
  '}': 'braceright',
};

/** A key as the policy names it (pyautogui style: "ctrl", "enter", "a", "f5") as an X keysym for xdotool. */
export function xdotoolKeysym(name: string): string {
  const known = KEY_NAMES[name.toLowerCase()] ?? KEY_NAMES[name];
  if (known !== undefined) return known;
  if (/^f([1-9]|1[0-9]|2[0-4])$/i.test(name)) return name.toUpperCase();
  return name; // a letter, a digit, or already a keysym name ("Page_Up", "KP_Enter")
}

/** The xdotool arguments (after `xdotool`) of an action; null for actions xdotool does not run (wait, terminate). */
export function xdotoolArgs(action: ComputerUseAction, screen: ScreenSize): string[] | null {
  const moveTo = (point: readonly [number, number] | undefined): string[] =>
    point === undefined ? [] : ['mousemove', '--sync', ...toPixel(point, screen).map(String)];
  switch (action.action) {
    case 'key':
      return ['key', '--clearmodifiers', action.keys.map(xdotoolKeysym).join('+')];
    case 'type':
      return ['type', '--delay', '12', '--', action.text];
    case 'mouse_move':
      return moveTo(action.coordinate);
    case 'left_click':
      return [...moveTo(action.coordinate), 'click', '1'];
    case 'middle_click':
      return [...moveTo(action.coordinate), 'click', '2'];
    case 'right_click':
      return [...moveTo(action.coordinate), 'click', '3'];
    case 'double_click':
      return [...moveTo(action.coordinate), 'click', '--repeat', '2', '--delay', '80', '1'];
    case 'triple_click':
      return [...moveTo(action.coordinate), 'click', '--repeat', '3', '--delay', '80', '1'];
    case 'left_click_drag':
      return [
        ...moveTo(action.start_coordinate),
        'mousedown',
        '1',
        'sleep',
        '0.1',
        ...moveTo(action.coordinate),
        'sleep',
        '0.1',
        'mouseup',
        '1',
      ];
    case 'scroll':
    case 'hscroll': {
      const clicks = Math.min(Math.abs(action.pixels), MAX_SCROLL_CLICKS);
      if (clicks === 0) return moveTo(action.coordinate);
      const [positive, negative] = action.action === 'scroll' ? ['4', '5'] : ['7', '6'];
      const button = action.pixels > 0 ? positive : negative;
      return [...moveTo(action.coordinate), 'click', '--repeat', String(clicks), '--delay', '30', button];
    }
    case 'wait':
    case 'terminate':
      return null;
  }
}

/** What was done, in words, for the observation text. */
export function describeAction(action: ComputerUseAction, screen: ScreenSize): string {
  const at = (point: readonly [number, number] | undefined) =>
    point === undefined
      ? 'at the pointer'
      : `at (${point[0]}, ${point[1]}) = pixel (${toPixel(point, screen).join(', ')})`;
  switch (action.action) {
    case 'key':
      return `pressed ${action.keys.join('+')}`;
    case 'type':
      return `typed ${JSON.stringify(action.text)}`;
    case 'mouse_move':
      return `moved the pointer ${at(action.coordinate)}`;
    case 'left_click_drag':
      return `dragged ${action.start_coordinate ? `from ${at(action.start_coordinate)} ` : ''}to ${at(action.coordinate)}`;
    case 'scroll':
    case 'hscroll': {
      const clicks = Math.min(Math.abs(action.pixels), MAX_SCROLL_CLICKS);
      const direction =
        action.action === 'scroll'
          ? action.pixels > 0
            ? 'up'
            : 'down'
          : action.pixels > 0
            ? 'right'
            : 'left';
      return `scrolled ${direction} ${clicks} clicks ${at(action.coordinate)}`;
    }
    case 'wait':
      return `waited ${action.time} s`;
    case 'terminate':
      return `ended the task (${action.status})`;
    default:
      return `${action.action.replace('_', ' ')} ${at(action.coordinate)}`;
  }
}
