#include "lib/io/checkpoint.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "lib/base/checksum.hpp"
#include "lib/base/input_error.hpp"
#include "lib/base/strprintf.hpp"
#include "mpi_topology/mpi_counts.hpp"
#include "mpi_topology/mpi_session.hpp"
#include "mpi_topology/watchdog.hpp"

namespace eth {
namespace {

// Every HDF5 call whose failure is not a user's mistake goes through this: it names the call.
#define H5_CHECK(call) ::eth::h5_check((call), #call, __FILE__, __LINE__)
template <typename T>
T h5_check(T result, const char* call, const char* file, int line) {
  if (result < 0) throw std::runtime_error(strprintf("%s:%d: HDF5 call failed: %s", file, line, call));
  return result;
}

// An HDF5 identifier closed when it goes out of scope, so that a call that fails on a damaged
// file (and throws) leaves nothing open: dataspaces and datatypes are not closed with the file.
class H5Object {
 public:
  H5Object(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
  ~H5Object() {
    if (id_ >= 0) close_(id_);
  }
  H5Object(const H5Object&) = delete;
  H5Object& operator=(const H5Object&) = delete;
  operator hid_t() const { return id_; }

 private:
  hid_t id_;
  herr_t (*close_)(hid_t);
};

constexpr char kFormat[] = "eth-checkpoint";
constexpr int kVersion = 2;           // 2: a "checksums" dataset (3, tensors) of uint64
constexpr int kOldestReadable = 1;    // 1: no checksums, nothing verified
constexpr char kChecksums[] = "checksums";
constexpr CheckpointGroup kGroups[] = {CheckpointGroup::params, CheckpointGroup::adam_m, CheckpointGroup::adam_v};

// HDF5 prints its error stack by default; failures here are reported through exceptions.
void silence_hdf5() { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); }

const char* group_path(CheckpointGroup g) {
  switch (g) {
    case CheckpointGroup::params: return "params";
    case CheckpointGroup::adam_m: return "adam_m";
    case CheckpointGroup::adam_v: return "adam_v";
  }
  return "";
}

// The integers a checkpoint records about the model, by attribute name.
std::vector<std::pair<const char*, int>> model_dimensions(const ModelConfig& m) {
  return {{"vocab_size", m.vocab_size},   {"padded_vocab_size", m.padded_vocab_size}, {"max_seq_len", m.max_seq_len},
          {"num_layers", m.num_layers},   {"num_heads", m.num_heads},                 {"channels", m.channels}};
}

// The model's parts beyond its dimensions (family, norm, positions, MLP, K/V heads, biases, the
// head), so that a checkpoint of one family never loads into another whose tensors happen to share
// names and shapes. Files written before the Llama family hold GPT-2's.
constexpr const char* kModelParts = "model_parts";
std::string model_parts(const ModelConfig& m) {
  return describe_model(m) + (m.attention_bias ? ", attention biases" : "") + (m.mlp_bias ? ", MLP biases" : "");
}

void write_attribute(hid_t file, const char* name, hid_t type, const void* value) {
  const hid_t space = H5_CHECK(H5Screate(H5S_SCALAR));
  const hid_t attr = H5_CHECK(H5Acreate2(file, name, type, space, H5P_DEFAULT, H5P_DEFAULT));
  H5_CHECK(H5Awrite(attr, type, value));
  H5_CHECK(H5Aclose(attr));
  H5_CHECK(H5Sclose(space));
}

void write_string_attribute(hid_t file, const char* name, const std::string& text) {
  const hid_t string_type = H5_CHECK(H5Tcopy(H5T_C_S1));
  H5_CHECK(H5Tset_size(string_type, text.size() + 1));
  write_attribute(file, name, string_type, text.c_str());
  H5_CHECK(H5Tclose(string_type));
}

// Reads a scalar attribute, or fails naming the file and attribute.
template <typename T>
T read_attribute(hid_t file, const std::string& path, const char* name, hid_t type) {
  if (H5Aexists(file, name) <= 0) fail_input(path, name, "an attribute of an ETH checkpoint", "none");
  T value{};
  const H5Object attr(H5_CHECK(H5Aopen(file, name, H5P_DEFAULT)), H5Aclose);
  const H5Object space(H5_CHECK(H5Aget_space(attr)), H5Sclose);
  if (H5Sget_simple_extent_npoints(space) != 1 || H5Aread(attr, type, &value) < 0)
    fail_input(path, name, "a scalar attribute", "another kind");
  return value;
}

std::string read_string_attribute(hid_t file, const std::string& path, const char* name) {
  if (H5Aexists(file, name) <= 0) fail_input(path, name, "an attribute of an ETH checkpoint", "none");
  const H5Object attr(H5_CHECK(H5Aopen(file, name, H5P_DEFAULT)), H5Aclose);
  const H5Object type(H5_CHECK(H5Aget_type(attr)), H5Tclose);
  const H5Object space(H5_CHECK(H5Aget_space(attr)), H5Sclose);
  const bool is_string = H5Tget_class(type) == H5T_STRING && H5Tis_variable_str(type) == 0 &&
                         H5Sget_simple_extent_npoints(space) == 1;
  std::string value(is_string ? H5Tget_size(type) : 0, '\0');
  if (!is_string || H5Aread(attr, type, value.data()) < 0)
    fail_input(path, name, "a fixed-length string attribute", "another kind");
  return value.substr(0, value.find('\0'));
}

// Whether a dataset's stored type is of `type_class` and `bytes` wide: checked before reading, so
// that a damaged type does not make HDF5 convert through a buffer of its claimed size.
bool stored_as(hid_t set, H5T_class_t type_class, size_t bytes) {
  const H5Object type(H5Dget_type(set), H5Tclose);
  return type >= 0 && H5Tget_class(type) == type_class && H5Tget_size(type) == bytes;
}

std::string dataset_path(CheckpointGroup group, const std::string& tensor) {
  return std::string(group_path(group)) + "/" + tensor;
}

// Every dataset's name, in the order of the checksums: group by group, tensors in layout order.
std::vector<std::string> dataset_names(const ModelConfig& model) {
  const ParamLayout whole(model, {0, model.num_layers});
  std::vector<std::string> names;
  for (CheckpointGroup g : kGroups)
    for (const ParamTensor& t : whole.tensors()) names.push_back(dataset_path(g, t.name));
  return names;
}

}  // namespace

CheckpointWriter::CheckpointWriter(const std::string& path, const ModelConfig& model, const CheckpointHeader& header,
                                   MPI_Comm comm)
    : comm_(comm) {
  silence_hdf5();
  const hid_t access = H5_CHECK(H5Pcreate(H5P_FILE_ACCESS));
  H5_CHECK(H5Pset_fapl_mpio(access, comm, MPI_INFO_NULL));
  file_ = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, access);
  H5_CHECK(H5Pclose(access));
  if (file_ < 0) fail_input(path, "checkpoint", "a path where an HDF5 file can be created", "one that cannot");
  // Metadata is collective: every rank writes the same attributes and creates every dataset.
  write_string_attribute(file_, "format", kFormat);
  // The batch split the run continues with (online re-balancing changes it): a resume under the
  // same plan takes it, so that it computes the same numbers bit for bit.
  if (!header.plan_yaml.empty()) write_string_attribute(file_, "plan", header.plan_yaml);
  write_attribute(file_, "version", H5T_NATIVE_INT, &kVersion);
  write_attribute(file_, "step", H5T_NATIVE_INT, &header.step);
  write_attribute(file_, "global_batch", H5T_NATIVE_INT, &header.global_batch);
  write_attribute(file_, "seed", H5T_NATIVE_UINT64, &header.seed);
  if (header.loss_scale) {
    write_attribute(file_, "loss_scale", H5T_NATIVE_DOUBLE, &header.loss_scale->scale);
    write_attribute(file_, "loss_scale_clean_steps", H5T_NATIVE_INT, &header.loss_scale->clean_steps);
    write_attribute(file_, "skipped_steps", H5T_NATIVE_INT64, &header.loss_scale->skipped);
  }
  for (const auto& [name, value] : model_dimensions(model)) write_attribute(file_, name, H5T_NATIVE_INT, &value);
  write_string_attribute(file_, kModelParts, model_parts(model));
  const ParamLayout whole(model, {0, model.num_layers});
  for (CheckpointGroup g : kGroups) {
    H5_CHECK(H5Gclose(H5_CHECK(H5Gcreate2(file_, group_path(g), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT))));
    for (const ParamTensor& t : whole.tensors()) {
      const std::vector<hsize_t> dims(t.shape.begin(), t.shape.end());
      const hid_t space = H5_CHECK(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr));
      const std::string name = dataset_path(g, t.name);
      datasets_[name] = H5_CHECK(H5Dcreate2(file_, name.c_str(), H5T_IEEE_F32LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
      H5_CHECK(H5Sclose(space));
    }
  }
  for (const std::string& name : dataset_names(model)) index_.emplace(name, index_.size());
  checksums_.assign(index_.size(), 0);
  const hsize_t dims[2] = {std::size(kGroups), whole.tensors().size()};
  const hid_t space = H5_CHECK(H5Screate_simple(2, dims, nullptr));
  datasets_[kChecksums] = H5_CHECK(H5Dcreate2(file_, kChecksums, H5T_STD_U64LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
  H5_CHECK(H5Sclose(space));
}

CheckpointWriter::~CheckpointWriter() {
  for (const auto& [name, set] : datasets_) H5Dclose(set);  // every rank, in one order
  if (file_ >= 0) H5Fclose(file_);
}

void CheckpointWriter::write(CheckpointGroup group, const ParamTensor& t, const float* host) {
  const std::string name = dataset_path(group, t.name);
  H5_CHECK(H5Dwrite(datasets_.at(name), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, host));
  checksums_[index_.at(name)] = checksum64(host, t.size * sizeof(float));
}

void CheckpointWriter::finish() {
  // Each tensor has exactly one writer and every other rank holds 0 there: the sum is its value.
  std::vector<MPI_Request> requests;
  large_iallreduce(checksums_.data(), checksums_.size(), MPI_UINT64_T, MPI_SUM, comm_, requests);
  watched_wait_all(requests, {"the sum of the checkpoint's checksums", {}});
  int rank = 0;
  MPI_CHECK(MPI_Comm_rank(comm_, &rank));
  if (rank == 0)
    H5_CHECK(H5Dwrite(datasets_.at(kChecksums), H5T_NATIVE_UINT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, checksums_.data()));
  for (const auto& [name, set] : datasets_) H5_CHECK(H5Dclose(set));
  datasets_.clear();
  const hid_t file = file_;
  file_ = -1;
  H5_CHECK(H5Fclose(file));  // flushes: the file is complete when every rank returns
}

CheckpointReader::CheckpointReader(const std::string& path, const ModelConfig& model) : path_(path) {
  silence_hdf5();
  if (H5Fis_hdf5(path.c_str()) <= 0)
    fail_input(path, "checkpoint", "an HDF5 file written by eth_train --checkpoint-every", "a missing or non-HDF5 file");
  // Closing the file closes whatever is still open in it: a damaged file can fail a call between
  // opening an object and closing it, and that object must not outlive the reader.
  const hid_t access = H5_CHECK(H5Pcreate(H5P_FILE_ACCESS));
  H5_CHECK(H5Pset_fclose_degree(access, H5F_CLOSE_STRONG));
  file_ = H5Fopen(path.c_str(), H5F_ACC_RDONLY, access);
  H5_CHECK(H5Pclose(access));
  if (file_ < 0) fail_input(path, "checkpoint", "an HDF5 file that opens", "one that cannot be opened (truncated?)");
  try {
    const std::string format = read_string_attribute(file_, path, "format");
    if (format != kFormat) fail_input(path, "format", std::string("'") + kFormat + "'", "'" + format + "'");
    const int version = read_attribute<int>(file_, path, "version", H5T_NATIVE_INT);
    if (version < kOldestReadable || version > kVersion)
      fail_input(path, "version", strprintf("%d to %d", kOldestReadable, kVersion), std::to_string(version));
    for (const auto& [name, value] : model_dimensions(model)) {
      const int stored = read_attribute<int>(file_, path, name, H5T_NATIVE_INT);
      if (stored != value)
        fail_input(path, name, strprintf("%d, as in the model of --model (%s)", value, model.name.c_str()), std::to_string(stored));
    }
    const std::string parts =
        H5Aexists(file_, kModelParts) > 0
            ? read_string_attribute(file_, path, kModelParts)
            : model_parts(gpt2_config(model.name, model.vocab_size, model.padded_vocab_size, model.max_seq_len,
                                      model.num_layers, model.num_heads, model.channels));
    if (parts != model_parts(model))
      fail_input(path, kModelParts, "'" + model_parts(model) + "', as in the model of --model (" + model.name + ")",
                 "'" + parts + "'");
    header_.step = read_attribute<int>(file_, path, "step", H5T_NATIVE_INT);
    header_.global_batch = read_attribute<int>(file_, path, "global_batch", H5T_NATIVE_INT);
    header_.seed = read_attribute<uint64_t>(file_, path, "seed", H5T_NATIVE_UINT64);
    if (version >= 2) read_checksums(model);
    if (H5Aexists(file_, "plan") > 0) header_.plan_yaml = read_string_attribute(file_, path, "plan");
    if (H5Aexists(file_, "loss_scale") > 0) {  // a run with dynamic loss scaling (fp16) wrote it
      LossScaleState& s = header_.loss_scale.emplace();
      s.scale = read_attribute<double>(file_, path, "loss_scale", H5T_NATIVE_DOUBLE);
      s.clean_steps = read_attribute<int>(file_, path, "loss_scale_clean_steps", H5T_NATIVE_INT);
      s.skipped = read_attribute<int64_t>(file_, path, "skipped_steps", H5T_NATIVE_INT64);
      if (!(s.scale > 0 && std::isfinite(s.scale)) || s.clean_steps < 0 || s.skipped < 0)
        fail_input(path, "loss_scale", "a positive finite scale and non-negative counts",
                   strprintf("%g, %d, %lld", s.scale, s.clean_steps, static_cast<long long>(s.skipped)));
    }
  } catch (...) {
    H5Fclose(file_);
    throw;
  }
}

void CheckpointReader::read_checksums(const ModelConfig& model) {
  const std::vector<std::string> names = dataset_names(model);
  std::vector<uint64_t> values(names.size());
  const H5Object set(H5Lexists(file_, kChecksums, H5P_DEFAULT) > 0 ? H5Dopen2(file_, kChecksums, H5P_DEFAULT) : -1, H5Dclose);
  if (set < 0) fail_input(path_, kChecksums, "a dataset of every tensor's checksum", "none");
  const H5Object space(H5_CHECK(H5Dget_space(set)), H5Sclose);
  if (!stored_as(set, H5T_INTEGER, sizeof(uint64_t)) || H5Sget_simple_extent_npoints(space) != static_cast<hssize_t>(values.size()) ||
      H5Dread(set, H5T_NATIVE_UINT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()) < 0)
    fail_input(path_, kChecksums, strprintf("%zu uint64 values", values.size()), "another size or type");
  for (size_t i = 0; i < names.size(); i++) checksums_[names[i]] = values[i];
}

CheckpointReader::~CheckpointReader() {
  if (file_ >= 0) H5Fclose(file_);
}

void CheckpointReader::read(CheckpointGroup group, const ParamTensor& t, float* host) {
  const std::string name = dataset_path(group, t.name);
  if (H5Lexists(file_, group_path(group), H5P_DEFAULT) <= 0 || H5Lexists(file_, name.c_str(), H5P_DEFAULT) <= 0)
    fail_input(path_, name, "a dataset of every tensor of the model", "none");
  const H5Object set(H5Dopen2(file_, name.c_str(), H5P_DEFAULT), H5Dclose);
  if (set < 0) fail_input(path_, name, "a dataset that opens", "one that cannot be opened");
  const H5Object space(H5_CHECK(H5Dget_space(set)), H5Sclose);
  const int rank = H5Sget_simple_extent_ndims(space);
  std::vector<hsize_t> dims(static_cast<size_t>(std::max(rank, 0)));
  if (rank < 0 || H5Sget_simple_extent_dims(space, dims.data(), nullptr) < 0)
    fail_input(path_, name, "a dataset with a readable shape", "one without");
  const bool same_shape = std::equal(dims.begin(), dims.end(), t.shape.begin(), t.shape.end());
  if (!stored_as(set, H5T_FLOAT, sizeof(float))) fail_input(path_, name, "float32 values", "another type");
  const herr_t read = same_shape ? H5Dread(set, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, host) : 0;
  if (!same_shape) {
    std::string want, got;
    for (size_t d : t.shape) want += strprintf("%s%zu", want.empty() ? "" : " x ", d);
    for (hsize_t d : dims) got += strprintf("%s%llu", got.empty() ? "" : " x ", static_cast<unsigned long long>(d));
    fail_input(path_, name, "shape " + want, got);
  }
  if (read < 0) fail_input(path_, name, "float32 values", "a dataset that cannot be read");
  const auto sum = checksums_.find(name);
  if (sum != checksums_.end() && sum->second != checksum64(host, t.size * sizeof(float)))
    fail_input(path_, name, "values matching the checkpoint's checksum", "damaged values");
}

std::string verify_checkpoint(const std::string& path, const ModelConfig& model) {
  try {
    CheckpointReader reader(path, model);
    const ParamLayout whole(model, {0, model.num_layers});
    std::vector<float> host;
    for (CheckpointGroup g : kGroups)
      for (const ParamTensor& t : whole.tensors()) {
        host.resize(t.size);
        reader.read(g, t, host.data());
      }
  } catch (const InputError& e) {
    return e.what();
  } catch (const std::runtime_error& e) {  // an HDF5 call on a truncated file
    return strprintf("%s: checkpoint: expected a complete HDF5 file, got one that cannot be read (%s)", path.c_str(), e.what());
  }
  return "";
}

}  // namespace eth
