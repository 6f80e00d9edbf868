import { describe, expect, it } from "vitest";
import { conninfoValue, jdbcUrl, psqlCommand } from "../src/connect";

describe("connecting your own client", () => {
  it("quotes a conninfo value only when it must, escaping what libpq reads", () => {
    expect(conninfoValue("db_01abc:reader")).toBe("db_01abc:reader");
    expect(conninfoValue("ann@example.com")).toBe("ann@example.com");
    expect(conninfoValue("it's a \\ name")).toBe("'it\\'s a \\\\ name'");
    expect(conninfoValue("")).toBe("''");
  });

  it("makes a psql command the shell reads as one argument, with no password", () => {
    const command = psqlCommand("localhost", "4432", "db_1:reader", 'o"brien$(id)`x`');
    expect(command).toBe(`psql "host=localhost port=4432 dbname=db_1:reader user='o\\"brien\\$(id)\\\`x\\\`' sslmode=require"`);
    expect(command).not.toContain("password");
  });

  it("encodes the database string and the user in a JDBC URL", () => {
    expect(jdbcUrl("db.example.com", "4432", "db_1:reader", "ann@example.com")).toBe(
      "jdbc:postgresql://db.example.com:4432/db_1%3Areader?user=ann%40example.com&sslmode=require",
    );
  });
});
