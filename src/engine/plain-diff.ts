import microdiff, { type Difference } from "microdiff";

/**
 * microdiff's changes between two values, the same list in the same order, faster on the plain
 * JSON that `inspect` diffs: arrays are walked by index (microdiff's `for…in` turns every index
 * into a string and back). Any other object (a Date, a Map, a class instance) is handed to
 * microdiff itself, from where it stands.
 */
export function plainDiff(before: Record<string, unknown> | unknown[], after: Record<string, unknown> | unknown[]): Difference[] {
  const changes: Difference[] = [];
  walk(before, after, [], changes);
  return changes;
}

type Path = Array<string | number>;

const isPlain = (value: object): boolean => {
  const prototype = Object.getPrototypeOf(value) as unknown;
  return prototype === Object.prototype || prototype === Array.prototype;
};

/** microdiff's changes of a pair it must judge itself, under `path` (and `key`, kept a number in an array). */
function delegate(before: object, after: object, path: Path, changes: Difference[], key?: string | number): void {
  for (const change of microdiff(before as Record<string, unknown>, after as Record<string, unknown>)) {
    const [first, ...rest] = change.path;
    changes.push({ ...change, path: [...path, key ?? first!, ...rest] } as Difference);
  }
}

/** `path` is the walk's stack: changes take a copy. */
function walk(before: object, after: object, path: Path, changes: Difference[]): void {
  if (!isPlain(before) || !isPlain(after)) return delegate(before, after, path, changes);
  if (Array.isArray(before)) {
    for (let index = 0; index < before.length; index++) compare(index, before[index], after, path, changes);
  } else {
    for (const key in before) compare(key, (before as Record<string, unknown>)[key], after, path, changes);
  }
  if (Array.isArray(after)) {
    for (let index = 0; index < after.length; index++) {
      if (!(index in before)) changes.push({ type: "CREATE", path: [...path, index], value: after[index] });
    }
  } else {
    for (const key in after) {
      if (!(key in before)) changes.push({ type: "CREATE", path: [...path, key], value: (after as Record<string, unknown>)[key] });
    }
  }
}

/** One key of `before` against `after`, as microdiff's first loop judges it. */
function compare(key: string | number, value: unknown, after: object, path: Path, changes: Difference[]): void {
  if (!(key in after)) {
    changes.push({ type: "REMOVE", path: [...path, key], oldValue: value });
    return;
  }
  const newValue = (after as Record<string | number, unknown>)[key];
  if (value && typeof value === "object" && !isPlain(value)) {
    // A Date, RegExp or class instance: microdiff's own rules, on the one key.
    return delegate({ [key]: value }, { [key]: newValue }, path, changes, key);
  }
  if (value && newValue && typeof value === "object" && typeof newValue === "object" && Array.isArray(value) === Array.isArray(newValue)) {
    path.push(key);
    walk(value, newValue, path, changes);
    path.pop();
    return;
  }
  if (!Object.is(value, newValue)) changes.push({ type: "CHANGE", path: [...path, key], value: newValue, oldValue: value });
}
