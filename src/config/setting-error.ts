/** A setting the operator must fix; its message names the setting and is shown as it is. */
export class SettingError extends Error {}
