/**
 * A media type's essence: without its parameters, trimmed, lower case
 * (`Application/JSON; charset=utf-8` → `application/json`), as media types are compared.
 */
export function mediaTypeEssence(mediaType: string): string {
  return mediaType.split(';', 1)[0]!.trim().toLowerCase();
}
