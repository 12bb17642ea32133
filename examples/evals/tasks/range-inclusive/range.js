/** The whole numbers from `start` to `end`, both included: range(1, 3) is [1, 2, 3]. */
export function range(start, end) {
  const numbers = [];
  for (let n = start; n < end; n++) numbers.push(n);
  return numbers;
}
