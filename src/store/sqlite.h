// A small RAII layer over the sqlite3 C API: a connection, prepared statements, transactions.
// Errors from SQLite become InputError carrying the database path and SQLite's message, since
// they come from the file the user named (unreadable, locked, not a database, full disk).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

struct sqlite3;
struct sqlite3_stmt;

namespace dnncast::store {

class Statement;

class Database {
 public:
  enum class Mode { ReadOnly, ReadWrite, Create };
  Database(const std::string& path, Mode mode);
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;
  Database(Database&& other) noexcept;
  Database& operator=(Database&& other) noexcept;

  // Runs one or more statements without results ("PRAGMA ...; CREATE TABLE ...").
  void exec(const std::string& sql);
  Statement prepare(const std::string& sql);
  int64_t last_insert_rowid() const;
  int changes() const;
  bool in_autocommit() const;  // false inside BEGIN ... COMMIT
  const std::string& path() const { return path_; }
  // A copy of the whole database in memory (sqlite3_backup), writable, named like this one in
  // messages: how a reader migrates an older file it must not write.
  Database copy_in_memory() const;
  sqlite3* handle() const { return db_; }

  // Throws InputError "<path>: <what>: <sqlite message>" (used by Statement too).
  [[noreturn]] void fail(const std::string& what) const;

 private:
  Database() = default;
  sqlite3* db_ = nullptr;
  std::string path_;
};

// A prepared statement; bind parameters are 1-based as in SQLite.
class Statement {
 public:
  Statement(Database& db, const std::string& sql);
  ~Statement();
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  Statement(Statement&& other) noexcept;

  Statement& bind(int index, int64_t value);
  Statement& bind(int index, int value) { return bind(index, static_cast<int64_t>(value)); }
  Statement& bind(int index, double value);
  Statement& bind(int index, const std::string& value);
  Statement& bind(int index, const char* value) { return bind(index, std::string(value)); }
  Statement& bind_null(int index);
  Statement& bind(int index, const std::optional<double>& value);
  Statement& bind(int index, const std::optional<int64_t>& value);
  // By name (":name"); throws a bug assert when the statement has no such parameter.
  template <typename T>
  Statement& bind(const char* name, const T& value) {
    return bind(parameter_index(name), value);
  }

  // Steps once: true when a row is available, false when done.
  bool step();
  // Steps until done (for statements without results).
  void run();
  void reset();  // rewinds and clears bindings for reuse

  int columns() const;
  std::string column_name(int index) const;
  bool is_null(int index) const;
  int64_t get_int(int index) const;
  double get_double(int index) const;
  std::string get_text(int index) const;
  std::optional<double> get_optional_double(int index) const;
  std::optional<int64_t> get_optional_int(int index) const;

 private:
  int parameter_index(const char* name) const;
  Database* db_ = nullptr;
  sqlite3_stmt* stmt_ = nullptr;
};

// BEGIN IMMEDIATE on construction, ROLLBACK on destruction unless commit() was called.
class Transaction {
 public:
  explicit Transaction(Database& db);
  ~Transaction();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  void commit();

 private:
  Database& db_;
  bool done_ = false;
};

}  // namespace dnncast::store
