/** Every field of `T`, required or optional, mapped to `true`. */
export type AllFields<T> = { readonly [K in keyof T]-?: true };

/**
 * For each variant of the union `TUnion`, named by its tag field `TTag`, every field of that
 * variant. A constant declared `as const satisfies FieldTable<…>` compiles only while it lists
 * exactly the union's variants and their fields: a mapper keeps one next to the code that copies
 * them, so a type that gains, loses or renames a field or a variant fails the build there.
 */
export type FieldTable<TUnion, TTag extends keyof TUnion> = {
  readonly [N in TUnion[TTag] & PropertyKey]: AllFields<Extract<TUnion, { readonly [K in TTag]: N }>>;
};
