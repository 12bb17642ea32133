/** The mean of a list of numbers; 0 for an empty list. */
export function average(numbers) {
  let total = 0;
  for (const n of numbers) total += n;
  return total / numbers.length;
}
