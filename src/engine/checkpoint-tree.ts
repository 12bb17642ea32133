/**
 * A thread's root checkpoints as a tree: a live fork (`replay --from`) adds a second child to
 * the checkpoint it starts from, so the thread's history branches there.
 */

/** A checkpoint as the tree sees it. Ids are time-ordered (uuid6): a parent is older than its children. */
export interface TreeItem {
  id: string;
  parentId?: string;
}

export interface BranchInfo {
  /** 0: the thread's original line; 1, 2 …: forks, in the order they were made. */
  branch: number;
  /** The checkpoint the branch grew from (none for branch 0). */
  forkedFrom?: string;
  /** The branch's first and newest checkpoints. */
  first: string;
  tip: string;
}

export interface CheckpointTree {
  /** Children of each checkpoint, oldest first. */
  children: ReadonlyMap<string, readonly string[]>;
  /** Branch of each checkpoint: a checkpoint's oldest child stays on its branch, later children start new ones. */
  branchOf: ReadonlyMap<string, number>;
  branches: readonly BranchInfo[];
  /** The newest checkpoint: where `resume` continues. */
  head?: string;
  /** Checkpoints whose parent is not in the thread (normally just the run's input). */
  roots: readonly string[];
}

/** Builds the tree from the thread's checkpoints, oldest first. */
export function checkpointTree(items: readonly TreeItem[]): CheckpointTree {
  const known = new Set(items.map((item) => item.id));
  const children = new Map<string, string[]>();
  const roots: string[] = [];
  for (const item of items) {
    if (item.parentId !== undefined && known.has(item.parentId)) {
      const siblings = children.get(item.parentId) ?? [];
      siblings.push(item.id);
      children.set(item.parentId, siblings);
    } else {
      roots.push(item.id);
    }
  }
  const branchOf = new Map<string, number>();
  const branches: BranchInfo[] = [];
  for (const item of items) {
    const parent = item.parentId !== undefined && known.has(item.parentId) ? item.parentId : undefined;
    if (parent !== undefined && children.get(parent)![0] === item.id) {
      branchOf.set(item.id, branchOf.get(parent)!);
    } else {
      branchOf.set(item.id, branches.length);
      branches.push({ branch: branches.length, ...(parent !== undefined ? { forkedFrom: parent } : {}), first: item.id, tip: item.id });
    }
    branches[branchOf.get(item.id)!]!.tip = item.id;
  }
  return { children, branchOf, branches, head: items.at(-1)?.id, roots };
}

/** The checkpoints from the root down to `id` (the branch as a run sees it), oldest first. */
export function lineage(items: readonly TreeItem[], id: string): string[] {
  const parentOf = new Map(items.map((item) => [item.id, item.parentId]));
  const chain: string[] = [];
  for (let current: string | undefined = id; current !== undefined && parentOf.has(current); current = parentOf.get(current)) {
    chain.push(current);
  }
  return chain.reverse();
}

export interface TreeRow {
  id: string;
  /** Guides drawn before the checkpoint: `├─ ` / `└─ ` where a branch starts, `│  ` beside an earlier branch. */
  guide: string;
}

/**
 * The checkpoints in display order: each branch in full, then the branches that fork off it,
 * indented under the checkpoint they start from.
 */
export function treeRows(tree: CheckpointTree): TreeRow[] {
  const rows: TreeRow[] = [];
  const walk = (start: string, firstGuide: string, restGuide: string): void => {
    rows.push({ id: start, guide: firstGuide });
    let kids = tree.children.get(start) ?? [];
    while (kids.length === 1) {
      rows.push({ id: kids[0]!, guide: restGuide });
      kids = tree.children.get(kids[0]!) ?? [];
    }
    kids.forEach((kid, index) => {
      const last = index === kids.length - 1;
      walk(kid, `${restGuide}${last ? "└─ " : "├─ "}`, `${restGuide}${last ? "   " : "│  "}`);
    });
  };
  for (const root of tree.roots) walk(root, "", "");
  return rows;
}

/** Checkpoints in the order of their tree (forks after the checkpoint they start from), each with its index in `checkpoints` and its guide. */
export function inTreeOrder<T extends { checkpointId: string; parentId?: string }>(
  checkpoints: readonly T[],
): Array<{ index: number; checkpoint: T; guide: string }> {
  const indexOf = new Map(checkpoints.map((checkpoint, index) => [checkpoint.checkpointId, index]));
  const tree = checkpointTree(checkpoints.map((c) => ({ id: c.checkpointId, parentId: c.parentId })));
  return treeRows(tree).map(({ id, guide }) => {
    const index = indexOf.get(id)!;
    return { index, checkpoint: checkpoints[index]!, guide };
  });
}

/** A graph nested in a step, as the tree places it: its namespace, the one it ran in, the checkpoint it ran from. */
export interface NestedPlace {
  ns: string;
  parentNs: string;
  from?: string;
}

/**
 * The graphs nested in the root graph's steps that ran from one of the checkpoints `from`, with
 * the graphs nested in them (their namespaces under theirs).
 */
export function nestedFrom<T extends NestedPlace>(nested: readonly T[], from: ReadonlySet<string | undefined>): T[] {
  const kept = new Set(nested.filter((inner) => inner.parentNs === "" && from.has(inner.from)).map((inner) => inner.ns));
  return nested.filter((inner) => kept.has(inner.ns.split("|")[0]!));
}
