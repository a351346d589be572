#include "store/sqlite.h"

#include <sqlite3.h>

#include <utility>

#include "core/error.h"

namespace dnncast::store {

Database::Database(const std::string& path, Mode mode) : path_(path) {
  int flags = mode == Mode::ReadOnly    ? SQLITE_OPEN_READONLY
              : mode == Mode::ReadWrite ? SQLITE_OPEN_READWRITE
                                        : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  int code = sqlite3_open_v2(path.c_str(), &db_, flags | SQLITE_OPEN_NOMUTEX, nullptr);
  if (code != SQLITE_OK) {
    std::string message = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(code);
    sqlite3_close(db_);
    db_ = nullptr;
    throw InputError(path + ": cannot open database: " + message);
  }
  sqlite3_extended_result_codes(db_, 1);
  // Another process (a second shard, `dataset stats` during a campaign) may hold the write lock briefly.
  sqlite3_busy_timeout(db_, 10000);
}

Database Database::copy_in_memory() const {
  Database copy;
  copy.path_ = path_;
  int code = sqlite3_open_v2(":memory:", &copy.db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (code != SQLITE_OK) throw InputError(path_ + ": cannot open an in-memory copy: " + sqlite3_errstr(code));
  sqlite3_backup* backup = sqlite3_backup_init(copy.db_, "main", db_, "main");
  if (backup == nullptr) copy.fail("cannot copy into memory");
  sqlite3_backup_step(backup, -1);
  if (sqlite3_backup_finish(backup) != SQLITE_OK) copy.fail("cannot copy into memory");
  return copy;
}

Database::~Database() {
  if (db_) sqlite3_close_v2(db_);
}

Database::Database(Database&& other) noexcept : db_(std::exchange(other.db_, nullptr)), path_(std::move(other.path_)) {}

Database& Database::operator=(Database&& other) noexcept {
  if (this != &other) {
    if (db_) sqlite3_close_v2(db_);
    db_ = std::exchange(other.db_, nullptr);
    path_ = std::move(other.path_);
  }
  return *this;
}

void Database::fail(const std::string& what) const {
  throw InputError(path_ + ": " + what + ": " + (db_ ? sqlite3_errmsg(db_) : "database closed"));
}

void Database::exec(const std::string& sql) {
  char* error = nullptr;
  int code = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &error);
  if (code != SQLITE_OK) {
    std::string message = error ? error : sqlite3_errstr(code);
    sqlite3_free(error);
    throw InputError(path_ + ": " + message + " (while running: " + sql.substr(0, 80) + ")");
  }
}

Statement Database::prepare(const std::string& sql) { return Statement(*this, sql); }

int64_t Database::last_insert_rowid() const { return sqlite3_last_insert_rowid(db_); }

int Database::changes() const { return sqlite3_changes(db_); }

bool Database::in_autocommit() const { return sqlite3_get_autocommit(db_) != 0; }

Statement::Statement(Database& db, const std::string& sql) : db_(&db) {
  if (sqlite3_prepare_v2(db.handle(), sql.c_str(), static_cast<int>(sql.size()), &stmt_, nullptr) != SQLITE_OK)
    db.fail("cannot prepare '" + sql.substr(0, 60) + "'");
}

Statement::~Statement() {
  if (stmt_) sqlite3_finalize(stmt_);
}

Statement::Statement(Statement&& other) noexcept : db_(other.db_), stmt_(std::exchange(other.stmt_, nullptr)) {}

Statement& Statement::bind(int index, int64_t value) {
  if (sqlite3_bind_int64(stmt_, index, value) != SQLITE_OK) db_->fail("bind");
  return *this;
}

Statement& Statement::bind(int index, double value) {
  if (sqlite3_bind_double(stmt_, index, value) != SQLITE_OK) db_->fail("bind");
  return *this;
}

Statement& Statement::bind(int index, const std::string& value) {
  if (sqlite3_bind_text(stmt_, index, value.data(), static_cast<int>(value.size()), SQLITE_TRANSIENT) != SQLITE_OK)
    db_->fail("bind");
  return *this;
}

Statement& Statement::bind_null(int index) {
  if (sqlite3_bind_null(stmt_, index) != SQLITE_OK) db_->fail("bind");
  return *this;
}

Statement& Statement::bind(int index, const std::optional<double>& value) {
  return value ? bind(index, *value) : bind_null(index);
}

Statement& Statement::bind(int index, const std::optional<int64_t>& value) {
  return value ? bind(index, *value) : bind_null(index);
}

int Statement::parameter_index(const char* name) const {
  int index = sqlite3_bind_parameter_index(stmt_, name);
  DNNCAST_ASSERT(index > 0);
  return index;
}

bool Statement::step() {
  int code = sqlite3_step(stmt_);
  if (code == SQLITE_ROW) return true;
  if (code == SQLITE_DONE) return false;
  db_->fail("statement failed");
}

void Statement::run() {
  while (step()) {
  }
}

void Statement::reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

int Statement::columns() const { return sqlite3_column_count(stmt_); }

std::string Statement::column_name(int index) const { return sqlite3_column_name(stmt_, index); }

bool Statement::is_null(int index) const { return sqlite3_column_type(stmt_, index) == SQLITE_NULL; }

int64_t Statement::get_int(int index) const { return sqlite3_column_int64(stmt_, index); }

double Statement::get_double(int index) const { return sqlite3_column_double(stmt_, index); }

std::string Statement::get_text(int index) const {
  const unsigned char* text = sqlite3_column_text(stmt_, index);
  if (!text) return {};
  return std::string(reinterpret_cast<const char*>(text), static_cast<size_t>(sqlite3_column_bytes(stmt_, index)));
}

std::optional<double> Statement::get_optional_double(int index) const {
  if (is_null(index)) return std::nullopt;
  return get_double(index);
}

std::optional<int64_t> Statement::get_optional_int(int index) const {
  if (is_null(index)) return std::nullopt;
  return get_int(index);
}

Transaction::Transaction(Database& db) : db_(db) { db_.exec("BEGIN IMMEDIATE"); }

Transaction::~Transaction() {
  if (!done_) sqlite3_exec(db_.handle(), "ROLLBACK", nullptr, nullptr, nullptr);
}

void Transaction::commit() {
  db_.exec("COMMIT");
  done_ = true;
}

}  // namespace dnncast::store
