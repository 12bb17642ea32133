export const ADULT_AGE = 18;

/** Whether a person of `age` years is an adult (18 or older). */
export function isAdult(age) {
  return age > ADULT_AGE;
}
