// Formatting SQL with sql-formatter, loaded the first time it is used (it stays out of the
// first load). `${name}` parameters are kept as they are.

const LANGUAGES: Record<string, string> = {
  postgres: "postgresql",
  mysql: "mariadb",
  sqlserver: "transactsql",
  oracle: "plsql",
  clickhouse: "sql",
};

/** `text` formatted in the adapter's dialect; throws with the formatter's reason when it can't
 * read it. */
export async function formatSql(text: string, adapter: string): Promise<string> {
  const { format } = await import("sql-formatter");
  return format(text, {
    language: (LANGUAGES[adapter] ?? "sql") as "sql",
    keywordCase: "preserve",
    paramTypes: { custom: [{ regex: String.raw`\$\{[A-Za-z0-9_.-]+\}` }] },
  });
}
