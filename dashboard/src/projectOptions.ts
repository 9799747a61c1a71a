// The new-project form's options: shown with the selected profile's values, and sent only
// when the user changed them, so a profile's own settings are never overridden by the form.

import type { Profile } from "./api/types";

export interface Options {
  max_depth: number;
  review: string;
}

/** Used only if the server lists a profile without these settings. */
const FALLBACK: Options = { max_depth: 2, review: "none" };

/** The selected profile's own values for the form's options. */
export function profileOptions(profile: Profile | undefined): Options {
  const settings = profile?.settings ?? {};
  return {
    max_depth: typeof settings.max_depth === "number" ? settings.max_depth : FALLBACK.max_depth,
    review: typeof settings.review === "string" ? settings.review : FALLBACK.review,
  };
}

/** The project's config: only the options the user set to something other than the profile's value. */
export function changedOptions(changed: Partial<Options>, defaults: Options): Partial<Options> {
  return Object.fromEntries(
    Object.entries(changed).filter(([key, value]) => value !== defaults[key as keyof Options]),
  ) as Partial<Options>;
}

