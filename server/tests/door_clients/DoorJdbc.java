// pgjdbc (Debian's libpostgresql-jdbc-java) through the dbconsole door: run as a single-file
// program by server/tests/door_clients.rs,
//   java -cp /usr/share/java/postgresql.jar DoorJdbc.java
// with DOOR_URL (jdbc:postgresql://…?sslmode=require), DOOR_USER, DOOR_PASSWORD, DOOR_TABLE (a
// table of 200 rows, columns id and label) and DOOR_CAP (the server's row cap). Prints one line
// per check, then "N passed, N failed".

import java.sql.*;
import java.util.*;
import java.util.concurrent.*;

public class DoorJdbc {
    static int passed = 0, failed = 0;

    interface Check { void run() throws Exception; }

    static void check(String name, Check check) {
        try {
            check.run();
            passed++;
            System.out.println("ok " + name);
        } catch (Throwable t) {
            failed++;
            System.out.println("FAILED " + name + ": " + t);
        }
    }

    static void expect(boolean ok, String what) {
        if (!ok) throw new AssertionError(what);
    }

    static boolean mentionsCap(SQLWarning warning) {
        for (SQLWarning w = warning; w != null; w = w.getNextWarning()) {
            if (w.getMessage().contains("row cap")) return true;
        }
        return false;
    }

    static Connection connect() throws SQLException {
        Properties props = new Properties();
        props.setProperty("user", System.getenv("DOOR_USER"));
        props.setProperty("password", System.getenv("DOOR_PASSWORD"));
        props.setProperty("ApplicationName", "DoorJdbc");
        return DriverManager.getConnection(System.getenv("DOOR_URL"), props);
    }

    public static void main(String[] args) throws Exception {
        String table = System.getenv("DOOR_TABLE");
        int cap = Integer.parseInt(System.getenv("DOOR_CAP"));
        try (Connection c = connect()) {
            check("the same PreparedStatement six times (a named statement from the fifth)", () -> {
                try (PreparedStatement ps = c.prepareStatement("select id, label from " + table + " where id = ?")) {
                    for (int i = 1; i <= 6; i++) {
                        ps.setInt(1, i);
                        try (ResultSet rs = ps.executeQuery()) {
                            expect(rs.next(), "a row for " + i);
                            expect(rs.getInt(1) == i, "id " + i);
                            expect(("row " + i).equals(rs.getString(2)), "label " + i);
                            expect(!rs.next(), "one row");
                        }
                    }
                }
            });
            check("setFetchSize with autocommit off reads in portions, all rows", () -> {
                c.setAutoCommit(false);
                try (Statement st = c.createStatement()) {
                    st.setFetchSize(7);
                    int n = 0;
                    try (ResultSet rs = st.executeQuery("select id from " + table + " where id <= 40 order by id")) {
                        while (rs.next()) {
                            n++;
                            expect(rs.getInt(1) == n, "in order");
                        }
                    }
                    expect(n == 40, "40 rows, got " + n);
                } finally {
                    c.commit();
                    c.setAutoCommit(true);
                }
            });
            check("setFetchSize past the cap: the portal's rows stop at the cap, with its warning", () -> {
                c.setAutoCommit(false);
                try (Statement st = c.createStatement()) {
                    st.setFetchSize(30);
                    int n = 0;
                    boolean warned = false;
                    try (ResultSet rs = st.executeQuery("select id from " + table + " order by id")) {
                        while (rs.next()) n++;
                        warned = mentionsCap(rs.getWarnings());
                    }
                    warned = warned || mentionsCap(st.getWarnings()) || mentionsCap(c.getWarnings());
                    expect(n == cap, "the cap of " + cap + " rows, got " + n);
                    expect(warned, "a row cap warning");
                } finally {
                    c.commit();
                    c.setAutoCommit(true);
                }
            });
            check("setMaxRows", () -> {
                try (Statement st = c.createStatement()) {
                    st.setMaxRows(5);
                    int n = 0;
                    try (ResultSet rs = st.executeQuery("select id from " + table)) {
                        while (rs.next()) n++;
                    }
                    expect(n == 5, "5 rows, got " + n);
                }
            });
            check("Statement.cancel() ends pg_sleep", () -> {
                try (Statement st = c.createStatement()) {
                    ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor();
                    timer.schedule(() -> {
                        try { st.cancel(); } catch (SQLException e) { throw new RuntimeException(e); }
                    }, 1, TimeUnit.SECONDS);
                    long start = System.nanoTime();
                    try {
                        st.execute("select pg_sleep(30)");
                        throw new AssertionError("not cancelled");
                    } catch (SQLException e) {
                        expect("57014".equals(e.getSQLState()), "57014, got " + e.getSQLState() + " " + e.getMessage());
                    } finally {
                        timer.shutdownNow();
                    }
                    expect((System.nanoTime() - start) / 1_000_000_000L < 20, "well before 30 s");
                }
                try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery("select 1")) {
                    expect(rs.next() && rs.getInt(1) == 1, "the connection still serves");
                }
            });
            check("a batch with an error in the middle fails as PostgreSQL fails it", () -> {
                try (Statement st = c.createStatement()) {
                    st.execute("create temp table door_batch (n int primary key)");
                }
                try (PreparedStatement ps = c.prepareStatement("insert into door_batch values (?)")) {
                    for (int n : new int[] {1, 1, 2}) {
                        ps.setInt(1, n);
                        ps.addBatch();
                    }
                    try {
                        ps.executeBatch();
                        throw new AssertionError("the duplicate was accepted");
                    } catch (BatchUpdateException e) {
                        expect("23505".equals(e.getSQLState()), "23505, got " + e.getSQLState());
                    }
                }
                try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery("select count(*) from door_batch")) {
                    expect(rs.next(), "a count");
                    expect(rs.getInt(1) <= 1, "nothing after the error ran: " + rs.getInt(1));
                }
            });
            check("a refused statement in a batch refuses it, and the connection goes on", () -> {
                try (Statement st = c.createStatement()) {
                    st.addBatch("set extra_float_digits = 3");
                    st.addBatch("set role postgres");
                    try {
                        st.executeBatch();
                        throw new AssertionError("set role went through");
                    } catch (BatchUpdateException e) {
                        expect("42501".equals(e.getSQLState()), "42501, got " + e.getSQLState());
                    }
                }
                try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery("select 2")) {
                    expect(rs.next() && rs.getInt(1) == 2, "the connection still serves");
                }
            });
            check("DatabaseMetaData.getTables and getColumns", () -> {
                DatabaseMetaData meta = c.getMetaData();
                boolean found = false;
                try (ResultSet rs = meta.getTables(null, "public", table, new String[] {"TABLE"})) {
                    while (rs.next()) if (table.equals(rs.getString("TABLE_NAME"))) found = true;
                }
                expect(found, "the table is listed");
                List<String> columns = new ArrayList<>();
                try (ResultSet rs = meta.getColumns(null, "public", table, "%")) {
                    while (rs.next()) columns.add(rs.getString("COLUMN_NAME"));
                }
                expect(columns.equals(List.of("id", "label")), "its columns: " + columns);
                expect(meta.getDatabaseProductVersion().matches("\\d+.*"), "the server's version");
            });
            String[] dbeaver = {
                "SELECT current_schema(),session_user",
                "SELECT n.oid,n.*,d.description FROM pg_catalog.pg_namespace n LEFT OUTER JOIN pg_catalog.pg_description d ON d.objoid=n.oid AND d.objsubid=0 AND d.classoid='pg_namespace'::regclass ORDER BY nspname",
                "SHOW search_path",
                "SELECT t.oid,t.*,c.relkind,format_type(nullif(t.typbasetype, 0), t.typtypmod) as base_type_name, d.description FROM pg_catalog.pg_type t LEFT OUTER JOIN pg_catalog.pg_type et ON et.oid=t.typelem LEFT OUTER JOIN pg_catalog.pg_class c ON c.oid=t.typrelid LEFT OUTER JOIN pg_catalog.pg_description d ON t.oid=d.objoid WHERE t.typname IS NOT NULL AND (c.relkind IS NULL OR c.relkind = 'c') AND (et.typcategory IS NULL OR et.typcategory <> 'C')",
                "SELECT a.oid,a.* FROM pg_catalog.pg_roles a ORDER BY a.rolname",
            };
            check("DBeaver's connect statements, in order", () -> {
                try (Statement st = c.createStatement()) {
                    for (String sql : dbeaver) {
                        st.execute(sql);
                    }
                }
                // The catalog the client knows is the database string (a dbconsole id); the real
                // database answers under its own name, as DBeaver's listing reads it.
                try (PreparedStatement ps = c.prepareStatement("SELECT db.oid,db.* FROM pg_catalog.pg_database db WHERE datallowconn AND NOT datistemplate OR db.datname=?")) {
                    ps.setString(1, c.getCatalog());
                    try (ResultSet rs = ps.executeQuery()) {
                        expect(rs.next(), "the database's row");
                    }
                }
            });
            String[] datagrip = {
                "SET extra_float_digits = 3",
                "SET application_name = 'DataGrip 2024.3'",
                "select version()",
                "select current_database() as a, current_schemas(false) as b",
                "SHOW TRANSACTION ISOLATION LEVEL",
                "select N.oid::bigint as id, N.xmin as state_number, nspname as name, D.description, pg_catalog.pg_get_userbyid(N.nspowner) as owner from pg_catalog.pg_namespace N left join pg_catalog.pg_description D on N.oid = D.objoid order by case when nspname = current_schema then -1::bigint else N.oid::bigint end",
            };
            check("DataGrip's connect statements, in order", () -> {
                try (Statement st = c.createStatement()) {
                    for (String sql : datagrip) {
                        st.execute(sql);
                    }
                }
            });
        }
        System.out.println(passed + " passed, " + failed + " failed");
        System.exit(failed == 0 ? 0 : 1);
    }
}
