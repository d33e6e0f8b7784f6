/*
 * A stand-in for libnvidia-ml.so.1: the NVML C ABI kubedra's driver reaches through nvidia-ml-py (pynvml), so the
 * tests run the real bindings over a library that answers as NVML documents it (nvml.h), without a GPU.
 *
 * Why it is strict: pynvml calls most functions without ctypes argtypes, so a wrong Python argument (a structure
 * where a pointer is due, a struct version left at 0, an array shorter than NVML writes) reaches C unchecked. The
 * real library would dereference garbage or overflow the caller's buffer; this one refuses what it cannot trust:
 *   - NULL or unmapped/misaligned pointers: NVML_ERROR_INVALID_ARGUMENT (the real one documents NULL; a bad pointer
 *     is a crash there, an error here so the test fails instead of the process dying);
 *   - handles it did not hand out, or handles of another kind (a compute instance as a device): INVALID_ARGUMENT;
 *   - versioned structures whose version is not the one nvml.h defines: INVALID_ARGUMENT, as documented;
 *   - string buffers shorter than the answer: NVML_ERROR_INSUFFICIENT_SIZE;
 *   - nvmlDeviceGetGpuInstancePossiblePlacements_v2: *count is read as the array's capacity and a short array is
 *     INSUFFICIENT_SIZE (the real library documents count as output only and writes every placement);
 *   - calls outside nvmlInit ... nvmlShutdown: NVML_ERROR_UNINITIALIZED (handles die with the session).
 *
 * The node it describes is a text file named by $KUBEDRA_NVML_STUB, read when the session count goes 0 -> 1 (no
 * file: NVML_ERROR_DRIVER_NOT_LOADED, as on a node with the library but no kernel module) and written back after
 * every MIG change, so MIG devices outlive a process as they outlive a driver restart on a GPU. One record per line,
 * tab-separated key=value fields after the record kind:
 *   system  driver=550.54.15  cuda=12040  caps=<dir>  log=<file>
 *   gpu     uuid=GPU-...  name=NVIDIA A100-SXM4-40GB  minor=0  brand=14  arch=7  cc=8.0  memory=<bytes>|none
 *           bus=00000000:07:00.0  mig=-1|0|1  model=A100-SXM4-40GB|H100-SXM5-80GB  events=1|0
 *   gi      gpu=<index>  id=<GI id>  profile=<profile id>  start=<slice>  size=<slices>
 *   ci      gpu=<index>  gi=<GI id>  id=<CI id>  profile=<CI profile index>  uuid=MIG-...
 * caps: the directory standing for /proc/driver/nvidia/capabilities; GPU and compute instances get their
 * gpu<minor>/mig/gi<GI>/[ci<CI>/]access files there, numbered as the kernel's mig-minors table numbers them.
 * log: every MIG create and destroy is appended there, one line each. XID events are injected through
 * kubedraStubInjectXid (tests call the kubedraStub* functions through ctypes).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

typedef int nvmlReturn_t;
enum {
    NVML_SUCCESS = 0,
    NVML_ERROR_UNINITIALIZED = 1,
    NVML_ERROR_INVALID_ARGUMENT = 2,
    NVML_ERROR_NOT_SUPPORTED = 3,
    NVML_ERROR_NO_PERMISSION = 4,
    NVML_ERROR_NOT_FOUND = 6,
    NVML_ERROR_INSUFFICIENT_SIZE = 7,
    NVML_ERROR_DRIVER_NOT_LOADED = 9,
    NVML_ERROR_TIMEOUT = 10,
    NVML_ERROR_IN_USE = 19,
    NVML_ERROR_MEMORY = 20,
    NVML_ERROR_INSUFFICIENT_RESOURCES = 23,
    NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
    NVML_ERROR_UNKNOWN = 999,
};

#define MAX_GPUS 16
#define MAX_GIS 15 /* GPU instance IDs 0..14 */
#define MAX_CIS 8
#define MAX_EVENT_SETS 32
#define MAX_QUEUED 64
#define GPU_INSTANCE_PROFILE_COUNT 0x12
#define COMPUTE_INSTANCE_PROFILE_COUNT 0x9
#define XID_CRITICAL_ERROR 0x8ULL
#define SUPPORTED_EVENTS (0x1ULL | 0x2ULL | XID_CRITICAL_ERROR)
#define NO_INSTANCE 0xFFFFFFFFu

/* ------------------------------------------------------------------------------------------ nvml.h layouts */

typedef struct nvmlDevice_st { int gpu, gi, ci; } *nvmlDevice_t;  /* gi < 0: the full GPU */
typedef struct nvmlGpuInstance_st { int gpu, id; } *nvmlGpuInstance_t;
typedef struct nvmlComputeInstance_st { int gpu, gi, id; } *nvmlComputeInstance_t;
typedef struct nvmlEventSet_st *nvmlEventSet_t;

typedef struct { unsigned long long total, free, used; } nvmlMemory_t;
typedef struct {
    char busIdLegacy[16];
    unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
    char busId[32];
} nvmlPciInfo_t;
typedef struct { unsigned int start, size; } nvmlGpuInstancePlacement_t;
typedef struct {
    unsigned int id, isP2pSupported, sliceCount, instanceCount, multiprocessorCount, copyEngineCount, decoderCount,
        encoderCount, jpegCount, ofaCount;
    unsigned long long memorySizeMB;
} nvmlGpuInstanceProfileInfo_t;
typedef struct {
    unsigned int version, id, isP2pSupported, sliceCount, instanceCount, multiprocessorCount, copyEngineCount,
        decoderCount, encoderCount, jpegCount, ofaCount;
    unsigned long long memorySizeMB;
    char name[96];
} nvmlGpuInstanceProfileInfo_v2_t;
typedef struct {
    unsigned int id, sliceCount, instanceCount, multiprocessorCount, sharedCopyEngineCount, sharedDecoderCount,
        sharedEncoderCount, sharedJpegCount, sharedOfaCount;
} nvmlComputeInstanceProfileInfo_t;
typedef struct {
    unsigned int version, id, sliceCount, instanceCount, multiprocessorCount, sharedCopyEngineCount,
        sharedDecoderCount, sharedEncoderCount, sharedJpegCount, sharedOfaCount;
    char name[96];
} nvmlComputeInstanceProfileInfo_v2_t;
typedef struct {
    nvmlDevice_t device;
    unsigned int id, profileId;
    nvmlGpuInstancePlacement_t placement;
} nvmlGpuInstanceInfo_t;
typedef struct {
    nvmlDevice_t device;
    nvmlGpuInstance_t gpuInstance;
    unsigned int id, profileId;
    struct { unsigned int start, size; } placement;
} nvmlComputeInstanceInfo_t;
typedef struct {
    nvmlDevice_t device;
    unsigned long long eventType, eventData;
    unsigned int gpuInstanceId, computeInstanceId;
} nvmlEventData_t;

#define STRUCT_VERSION(type, ver) ((unsigned int)(sizeof(type) | ((ver) << 24U)))

/* ------------------------------------------------------------------------------------------ MIG profiles */

struct profile {
    unsigned int index, id, slices, instances, sms, ce, dec, enc, jpeg, ofa;
    unsigned long long mib;
    const char *name;
    unsigned int nplacements;
    unsigned int placements[8][2];
};
struct model {
    const char *name;
    unsigned int nprofiles;
    const struct profile *profiles;
};

#define ONE_SLICE 7, {{0, 1}, {1, 1}, {2, 1}, {3, 1}, {4, 1}, {5, 1}, {6, 1}}
#define ONE_G_TWO_SLICES 4, {{0, 2}, {2, 2}, {4, 2}, {6, 2}}
#define TWO_G 3, {{0, 2}, {2, 2}, {4, 2}}
#define THREE_G 2, {{0, 4}, {4, 4}}
#define FOUR_G 1, {{0, 4}}
#define SEVEN_G 1, {{0, 8}}

/* NVML profile index (NVML_GPU_INSTANCE_PROFILE_*), profile ID, compute slices, instances, SMs, engines, MiB: the
 * values kubedra's catalogue (src/kubedra/cluster/catalogue.py) holds for these GPUs. */
static const struct profile A100_40GB[] = {
    {0x0, 19, 1, 7, 14, 1, 0, 0, 0, 0, 4864, "1g.5gb", ONE_SLICE},
    {0x7, 20, 1, 1, 14, 1, 1, 0, 1, 1, 4864, "1g.5gb+me", ONE_SLICE},
    {0x9, 15, 1, 4, 14, 1, 1, 0, 0, 0, 9856, "1g.10gb", ONE_G_TWO_SLICES},
    {0x1, 14, 2, 3, 28, 2, 1, 0, 0, 0, 9856, "2g.10gb", TWO_G},
    {0x2, 9, 3, 2, 42, 3, 2, 0, 0, 0, 19968, "3g.20gb", THREE_G},
    {0x3, 5, 4, 1, 56, 4, 2, 0, 0, 0, 19968, "4g.20gb", FOUR_G},
    {0x4, 0, 7, 1, 98, 7, 5, 0, 1, 1, 40192, "7g.40gb", SEVEN_G},
};
static const struct profile H100_80GB[] = {
    {0x0, 19, 1, 7, 16, 1, 1, 0, 1, 0, 9984, "1g.10gb", ONE_SLICE},
    {0x7, 20, 1, 1, 16, 1, 1, 0, 1, 1, 9984, "1g.10gb+me", ONE_SLICE},
    {0x9, 15, 1, 4, 26, 1, 1, 0, 1, 0, 20096, "1g.20gb", ONE_G_TWO_SLICES},
    {0x1, 14, 2, 3, 32, 2, 2, 0, 2, 0, 20096, "2g.20gb", TWO_G},
    {0x2, 9, 3, 2, 60, 3, 3, 0, 3, 0, 40448, "3g.40gb", THREE_G},
    {0x3, 5, 4, 1, 64, 4, 4, 0, 4, 0, 40448, "4g.40gb", FOUR_G},
    {0x4, 0, 7, 1, 132, 8, 7, 0, 7, 1, 81152, "7g.80gb", SEVEN_G},
};
static const struct model MODELS[] = {
    {"A100-SXM4-40GB", sizeof A100_40GB / sizeof A100_40GB[0], A100_40GB},
    {"H100-SXM5-80GB", sizeof H100_80GB / sizeof H100_80GB[0], H100_80GB},
};

/* NVML_COMPUTE_INSTANCE_PROFILE_* index -> compute slices (0: not offered on these GPUs) */
static const unsigned int CI_SLICES[COMPUTE_INSTANCE_PROFILE_COUNT] = {1, 2, 3, 4, 7, 0, 0, 0, 0};

/* ------------------------------------------------------------------------------------------ state */

struct ci { int used; unsigned int profile, start, size; char uuid[64]; };
struct gi { int used; const struct profile *profile; unsigned int start, size; struct ci cis[MAX_CIS]; };
struct gpu {
    char uuid[96], name[96], bus[32];
    unsigned int minor, brand, arch;
    int cc_major, cc_minor, has_memory, mig, events;
    unsigned long long memory;
    const struct model *model;
    struct gi gis[MAX_GIS];
};
struct event { int gpu; unsigned long long type, data; unsigned int gi, ci; };
struct nvmlEventSet_st {
    int used;
    unsigned long long mask[MAX_GPUS];
    struct event queue[MAX_QUEUED];
    int head, count;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t arrived = PTHREAD_COND_INITIALIZER;
static int refcount;
static unsigned int inits, shutdowns, waits;
static char state_path[4096], caps_root[4096], log_path[4096], driver_version[80];
static int cuda_version;
static int gpu_count;
static struct gpu gpus[MAX_GPUS];
static struct nvmlDevice_st gpu_handles[MAX_GPUS];
static struct nvmlDevice_st mig_handles[MAX_GPUS][MAX_GIS][MAX_CIS];
static struct nvmlGpuInstance_st gi_handles[MAX_GPUS][MAX_GIS];
static struct nvmlComputeInstance_st ci_handles[MAX_GPUS][MAX_GIS][MAX_CIS];
static struct nvmlEventSet_st event_sets[MAX_EVENT_SETS];

/* Every handle is a fixed slot whose contents are its coordinates; whether it is live is asked of the state. */
__attribute__((constructor)) static void number_handles(void) {
    for (int i = 0; i < MAX_GPUS; i++) {
        gpu_handles[i] = (struct nvmlDevice_st){i, -1, -1};
        for (int g = 0; g < MAX_GIS; g++) {
            gi_handles[i][g] = (struct nvmlGpuInstance_st){i, g};
            for (int c = 0; c < MAX_CIS; c++) {
                mig_handles[i][g][c] = (struct nvmlDevice_st){i, g, c};
                ci_handles[i][g][c] = (struct nvmlComputeInstance_st){i, g, c};
            }
        }
    }
}

/* A pointer the caller hands in: not NULL, aligned for its type, and on mapped pages. */
static int valid_pointer(const void *p, size_t size, size_t align) {
    if (p == NULL || ((uintptr_t)p % align) != 0) return 0;
    long page = sysconf(_SC_PAGESIZE);
    uintptr_t first = (uintptr_t)p & ~((uintptr_t)page - 1);
    size_t length = ((uintptr_t)p + size) - first;
    unsigned char vec[64];
    if ((length + (size_t)page - 1) / (size_t)page > sizeof vec) return 1;
    return mincore((void *)first, length, vec) == 0;
}

static int handle_index(const void *handle, const void *base, size_t element, size_t count) {
    uintptr_t h = (uintptr_t)handle, b = (uintptr_t)base;
    if (h < b || h >= b + element * count || (h - b) % element != 0) return -1;
    return (int)((h - b) / element);
}

static struct gi *gi_of(int gpu, int id) {
    if (gpu < 0 || gpu >= gpu_count || id < 0 || id >= MAX_GIS || !gpus[gpu].gis[id].used) return NULL;
    return &gpus[gpu].gis[id];
}

static struct ci *ci_of(int gpu, int gi, int id) {
    struct gi *g = gi_of(gpu, gi);
    if (g == NULL || id < 0 || id >= MAX_CIS || !g->cis[id].used) return NULL;
    return &g->cis[id];
}

/* The device a handle stands for: a full GPU (gi < 0) or a MIG device whose compute instance still exists. */
static nvmlDevice_t device_of(nvmlDevice_t handle) {
    int i = handle_index(handle, gpu_handles, sizeof gpu_handles[0], MAX_GPUS);
    if (i >= 0) return i < gpu_count ? handle : NULL;
    i = handle_index(handle, mig_handles, sizeof mig_handles[0][0][0], (size_t)MAX_GPUS * MAX_GIS * MAX_CIS);
    if (i < 0) return NULL;
    return ci_of(handle->gpu, handle->gi, handle->ci) != NULL ? handle : NULL;
}

static struct gpu *full_gpu(nvmlDevice_t handle) {
    nvmlDevice_t d = device_of(handle);
    return d != NULL && d->gi < 0 ? &gpus[d->gpu] : NULL;
}

static nvmlGpuInstance_t live_gi(nvmlGpuInstance_t handle) {
    int i = handle_index(handle, gi_handles, sizeof gi_handles[0][0], (size_t)MAX_GPUS * MAX_GIS);
    return i >= 0 && gi_of(handle->gpu, handle->id) != NULL ? handle : NULL;
}

static nvmlComputeInstance_t live_ci(nvmlComputeInstance_t handle) {
    int i = handle_index(handle, ci_handles, sizeof ci_handles[0][0][0], (size_t)MAX_GPUS * MAX_GIS * MAX_CIS);
    return i >= 0 && ci_of(handle->gpu, handle->gi, handle->id) != NULL ? handle : NULL;
}

static const struct profile *profile_by_id(const struct gpu *g, unsigned int id) {
    if (g->model == NULL) return NULL;
    for (unsigned int i = 0; i < g->model->nprofiles; i++)
        if (g->model->profiles[i].id == id) return &g->model->profiles[i];
    return NULL;
}

static const struct profile *profile_by_index(const struct gpu *g, unsigned int index) {
    if (g->model == NULL) return NULL;
    for (unsigned int i = 0; i < g->model->nprofiles; i++)
        if (g->model->profiles[i].index == index) return &g->model->profiles[i];
    return NULL;
}

static nvmlReturn_t copy_string(char *out, unsigned int length, const char *value) {
    if (out == NULL || !valid_pointer(out, length ? length : 1, 1)) return NVML_ERROR_INVALID_ARGUMENT;
    if (strlen(value) + 1 > length) return NVML_ERROR_INSUFFICIENT_SIZE;
    memcpy(out, value, strlen(value) + 1);
    return NVML_SUCCESS;
}

/* ------------------------------------------------------------------------------------------ the state file */

static void caps_minors(const struct gpu *g, int gi, int ci, unsigned int *gi_cap, unsigned int *ci_cap) {
    /* mig-minors: config 1, monitor 2, then per GPU 15 GPU instances of (access + 8 compute instances) */
    *gi_cap = 3 + g->minor * (MAX_GIS * (MAX_CIS + 1)) + (unsigned int)gi * (MAX_CIS + 1);
    *ci_cap = *gi_cap + 1 + (unsigned int)ci;
}

static void mkdirs(char *path) {
    for (char *p = path + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        mkdir(path, 0755);
        *p = '/';
    }
    mkdir(path, 0755);
}

static void write_cap(const struct gpu *g, int gi, int ci) {
    if (!caps_root[0]) return;
    unsigned int gi_cap, ci_cap;
    caps_minors(g, gi, ci < 0 ? 0 : ci, &gi_cap, &ci_cap);
    char dir[4200], file[4300];
    if (ci < 0) snprintf(dir, sizeof dir, "%s/gpu%u/mig/gi%d", caps_root, g->minor, gi);
    else snprintf(dir, sizeof dir, "%s/gpu%u/mig/gi%d/ci%d", caps_root, g->minor, gi, ci);
    mkdirs(dir);
    snprintf(file, sizeof file, "%s/access", dir);
    FILE *f = fopen(file, "w");
    if (f == NULL) return;
    fprintf(f, "DeviceFileMinor: %u\nDeviceFileMode: 292\nDeviceFileModify: 1\n", ci < 0 ? gi_cap : ci_cap);
    fclose(f);
}

static void remove_cap(const struct gpu *g, int gi, int ci) {
    if (!caps_root[0]) return;
    char dir[4200], file[4300];
    if (ci < 0) snprintf(dir, sizeof dir, "%s/gpu%u/mig/gi%d", caps_root, g->minor, gi);
    else snprintf(dir, sizeof dir, "%s/gpu%u/mig/gi%d/ci%d", caps_root, g->minor, gi, ci);
    snprintf(file, sizeof file, "%s/access", dir);
    unlink(file);
    rmdir(dir);
}

static void log_call(const char *format, ...) __attribute__((format(printf, 1, 2)));
static void log_call(const char *format, ...) {
    if (!log_path[0]) return;
    FILE *f = fopen(log_path, "a");
    if (f == NULL) return;
    va_list args;
    va_start(args, format);
    vfprintf(f, format, args);
    va_end(args);
    fputc('\n', f);
    fclose(f);
}

static void mig_uuid(const struct gpu *g, int gi, int ci, unsigned long long salt, char *out, size_t size) {
    unsigned long long h = 1469598103934665603ULL ^ salt;  /* FNV-1a over the parent, GI and CI */
    for (const char *p = g->uuid; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211ULL;
    h = (h ^ (unsigned long long)gi) * 1099511628211ULL;
    h = (h ^ (unsigned long long)ci) * 1099511628211ULL;
    unsigned long long k = (h ^ 0x9e3779b97f4a7c15ULL) * 1099511628211ULL;
    snprintf(out, size, "MIG-%08llx-%04llx-%04llx-%04llx-%012llx", h >> 32, (h >> 16) & 0xffff, h & 0xffff,
             k >> 48, k & 0xffffffffffffULL);
}

static const char *field(char *line, const char *key) {
    size_t n = strlen(key);
    for (char *p = strtok(line, "\t\n"); p; p = strtok(NULL, "\t\n"))
        if (strncmp(p, key, n) == 0 && p[n] == '=') return p + n + 1;
    return NULL;
}

/* The value of key in a tab-separated record (a copy per lookup: strtok cuts its input). */
static const char *get(const char *record, const char *key, char *buffer, size_t size) {
    snprintf(buffer, size, "%s", record);
    return field(buffer, key);
}

static long get_long(const char *record, const char *key, long otherwise) {
    char buffer[1024];
    const char *v = get(record, key, buffer, sizeof buffer);
    return v ? strtol(v, NULL, 0) : otherwise;
}

static void get_text(const char *record, const char *key, char *out, size_t size) {
    char buffer[1024];
    const char *v = get(record, key, buffer, sizeof buffer);
    snprintf(out, size, "%s", v ? v : "");
}

static int load_state(void) {
    FILE *f = fopen(state_path, "r");
    if (f == NULL) return -1;
    memset(gpus, 0, sizeof gpus);
    gpu_count = 0;
    caps_root[0] = log_path[0] = '\0';
    snprintf(driver_version, sizeof driver_version, "550.54.15");
    cuda_version = 12040;
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        if (strncmp(line, "system\t", 7) == 0) {
            get_text(line, "driver", driver_version, sizeof driver_version);
            cuda_version = (int)get_long(line, "cuda", 12040);
            get_text(line, "caps", caps_root, sizeof caps_root);
            get_text(line, "log", log_path, sizeof log_path);
        } else if (strncmp(line, "gpu\t", 4) == 0 && gpu_count < MAX_GPUS) {
            struct gpu *g = &gpus[gpu_count];
            char text[128];
            get_text(line, "uuid", g->uuid, sizeof g->uuid);
            get_text(line, "name", g->name, sizeof g->name);
            get_text(line, "bus", g->bus, sizeof g->bus);
            g->minor = (unsigned int)get_long(line, "minor", gpu_count);
            g->brand = (unsigned int)get_long(line, "brand", 14);
            g->arch = (unsigned int)get_long(line, "arch", 7);
            get_text(line, "cc", text, sizeof text);
            if (sscanf(text, "%d.%d", &g->cc_major, &g->cc_minor) != 2) g->cc_major = 8, g->cc_minor = 0;
            get_text(line, "memory", text, sizeof text);
            g->has_memory = strcmp(text, "none") != 0;
            g->memory = strtoull(text, NULL, 10);
            g->mig = (int)get_long(line, "mig", -1);
            g->events = (int)get_long(line, "events", 1);
            get_text(line, "model", text, sizeof text);
            for (size_t m = 0; m < sizeof MODELS / sizeof MODELS[0]; m++)
                if (strcmp(text, MODELS[m].name) == 0) g->model = &MODELS[m];
            gpu_count++;
        } else if (strncmp(line, "gi\t", 3) == 0) {
            int gpu = (int)get_long(line, "gpu", -1), id = (int)get_long(line, "id", -1);
            if (gpu < 0 || gpu >= gpu_count || id < 0 || id >= MAX_GIS) continue;
            struct gi *gi = &gpus[gpu].gis[id];
            gi->profile = profile_by_id(&gpus[gpu], (unsigned int)get_long(line, "profile", -1));
            if (gi->profile == NULL) continue;
            gi->used = 1;
            gi->start = (unsigned int)get_long(line, "start", 0);
            gi->size = (unsigned int)get_long(line, "size", 1);
        } else if (strncmp(line, "ci\t", 3) == 0) {
            int gpu = (int)get_long(line, "gpu", -1), g = (int)get_long(line, "gi", -1);
            int id = (int)get_long(line, "id", -1);
            struct gi *gi = gi_of(gpu, g);
            if (gi == NULL || id < 0 || id >= MAX_CIS) continue;
            struct ci *ci = &gi->cis[id];
            ci->used = 1;
            ci->profile = (unsigned int)get_long(line, "profile", 0);
            ci->size = CI_SLICES[ci->profile < COMPUTE_INSTANCE_PROFILE_COUNT ? ci->profile : 0];
            ci->start = (unsigned int)get_long(line, "start", 0);
            get_text(line, "uuid", ci->uuid, sizeof ci->uuid);
            if (!ci->uuid[0]) mig_uuid(&gpus[gpu], g, id, 0, ci->uuid, sizeof ci->uuid);
        }
    }
    fclose(f);
    for (int i = 0; i < gpu_count; i++)  /* the kernel's view of instances that exist */
        for (int g = 0; g < MAX_GIS; g++) {
            if (!gpus[i].gis[g].used) continue;
            write_cap(&gpus[i], g, -1);
            for (int c = 0; c < MAX_CIS; c++)
                if (gpus[i].gis[g].cis[c].used) write_cap(&gpus[i], g, c);
        }
    return 0;
}

static void save_state(void) {
    char temp[4200];
    snprintf(temp, sizeof temp, "%s.stub-%d", state_path, (int)getpid());
    FILE *f = fopen(temp, "w");
    if (f == NULL) return;
    fprintf(f, "system\tdriver=%s\tcuda=%d", driver_version, cuda_version);
    if (caps_root[0]) fprintf(f, "\tcaps=%s", caps_root);
    if (log_path[0]) fprintf(f, "\tlog=%s", log_path);
    fputc('\n', f);
    for (int i = 0; i < gpu_count; i++) {
        const struct gpu *g = &gpus[i];
        fprintf(f, "gpu\tuuid=%s\tname=%s\tminor=%u\tbrand=%u\tarch=%u\tcc=%d.%d\t", g->uuid, g->name, g->minor,
                g->brand, g->arch, g->cc_major, g->cc_minor);
        if (g->has_memory) fprintf(f, "memory=%llu", g->memory);
        else fprintf(f, "memory=none");
        fprintf(f, "\tbus=%s\tmig=%d\tevents=%d\tmodel=%s\n", g->bus, g->mig, g->events,
                g->model ? g->model->name : "");
    }
    for (int i = 0; i < gpu_count; i++)
        for (int g = 0; g < MAX_GIS; g++) {
            const struct gi *gi = &gpus[i].gis[g];
            if (!gi->used) continue;
            fprintf(f, "gi\tgpu=%d\tid=%d\tprofile=%u\tstart=%u\tsize=%u\n", i, g, gi->profile->id, gi->start,
                    gi->size);
            for (int c = 0; c < MAX_CIS; c++)
                if (gi->cis[c].used)
                    fprintf(f, "ci\tgpu=%d\tgi=%d\tid=%d\tprofile=%u\tstart=%u\tuuid=%s\n", i, g, c,
                            gi->cis[c].profile, gi->cis[c].start, gi->cis[c].uuid);
        }
    fclose(f);
    rename(temp, state_path);
}

/* ------------------------------------------------------------------------------------------ session */

#define SESSION() do { if (refcount == 0) { pthread_mutex_unlock(&lock); return NVML_ERROR_UNINITIALIZED; } } \
    while (0)
#define RETURN(value) do { nvmlReturn_t r_ = (value); pthread_mutex_unlock(&lock); return r_; } while (0)

nvmlReturn_t nvmlInitWithFlags(unsigned int flags) {
    (void)flags;
    pthread_mutex_lock(&lock);
    if (refcount == 0) {
        const char *path = getenv("KUBEDRA_NVML_STUB");
        if (path == NULL || !*path) RETURN(NVML_ERROR_DRIVER_NOT_LOADED);
        snprintf(state_path, sizeof state_path, "%s", path);
        if (load_state() != 0) RETURN(NVML_ERROR_DRIVER_NOT_LOADED);
    }
    refcount++;
    inits++;
    RETURN(NVML_SUCCESS);
}

nvmlReturn_t nvmlInit_v2(void) { return nvmlInitWithFlags(0); }
nvmlReturn_t nvmlInit(void) { return nvmlInitWithFlags(0); }

nvmlReturn_t nvmlShutdown(void) {
    pthread_mutex_lock(&lock);
    SESSION();
    refcount--;
    shutdowns++;
    if (refcount == 0) {
        gpu_count = 0;  /* every handle dies with the session */
        memset(event_sets, 0, sizeof event_sets);
        pthread_cond_broadcast(&arrived);
    }
    RETURN(NVML_SUCCESS);
}

const char *nvmlErrorString(nvmlReturn_t result) {
    switch (result) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_NO_PERMISSION: return "Insufficient Permissions";
    case NVML_ERROR_NOT_FOUND: return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
    case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
    case NVML_ERROR_TIMEOUT: return "Timeout";
    case NVML_ERROR_IN_USE: return "In use by another client";
    case NVML_ERROR_MEMORY: return "Insufficient Memory";
    case NVML_ERROR_INSUFFICIENT_RESOURCES: return "Insufficient Resources";
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH: return "Argument version mismatch";
    default: return "Unknown Error";
    }
}

/* ------------------------------------------------------------------------------------------ system, devices */

nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length) {
    pthread_mutex_lock(&lock);
    SESSION();
    RETURN(copy_string(version, length, driver_version));
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *version) {
    pthread_mutex_lock(&lock);
    SESSION();
    if (!valid_pointer(version, sizeof *version, _Alignof(int))) RETURN(NVML_ERROR_INVALID_ARGUMENT);
    *version = cuda_version;
    RETURN(NVML_SUCCESS);
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *version) { return nvmlSystemGetCudaDriverVersion(version); }

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count) {
    pthread_mutex_lock(&lock);
    SESSION();
    if (!valid_pointer(count, sizeof *count, _Alignof(unsigned int))) RETURN(NVML_ERROR_INVALID_ARGUMENT);
    *count = (unsigned int)gpu_count;
    RETURN(NVML_SUCCESS);
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device) {
    pthread_mutex_lock(&lock);
    SESSION();
    if (index >= (unsigned int)gpu_count || !valid_pointer(device, sizeof *device, _Alignof(nvmlDevice_t)))
        RETURN(NVML_ERROR_INVALID_ARGUMENT);
    *device = &gpu_handles[index];
    RETURN(NVML_SUCCESS);
}

nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *device) {
    pthread_mutex_lock(&lock);
    SESSION();
    if (!valid_pointer(uuid, 1, 1) || !valid_pointer(device, sizeof *device, _Alignof(nvmlDevice_t)))
        RETURN(NVML_ERROR_INVALID_ARGUMENT);
    for (int i = 0; i < gpu_count; i++) {
        if (strcmp(gpus[i].uuid, uuid) == 0) {
            *device = &gpu_handles[i];
            RETURN(NVML_SUCCESS);
        }
        for (int g = 0; g < MAX_GIS; g++)
            for (int c = 0; c < MAX_CIS; c++) {
                const struct ci *ci = ci_of(i, g, c);
                if (ci != NULL && strcmp(ci->uuid, uuid) == 0) {
                    *device = &mig_handles[i][g][c];
                    RETURN(NVML_SUCCESS);
                }
            }
    }
    RETURN(NVML_ERROR_NOT_FOUND);
}

#define DEVICE_QUERY(name, type, expr)                                                                          \
    nvmlReturn_t name(nvmlDevice_t device, type *out) {                                                          \
        pthread_mutex_lock(&lock);                                                                               \
        SESSION();                                                                                               \
        struct gpu *g = full_gpu(device);                                                                        \
        if (g == NULL) RETURN(device_of(device) != NULL ? NVML_ERROR_NOT_SUPPORTED : NVML_ERROR_INVALID_ARGUMENT); \
        if (!valid_pointer(out, sizeof *out, _Alignof(type))) RETURN(NVML_ERROR_INVALID_ARGUMENT);             \
        *out = (expr);                                                                                           \
        RETURN(NVML_SUCCESS);                                                                                    \
    }

DEVICE_QUERY(nvmlDeviceGetMinorNumber, unsigned int, g->minor)
DEVICE_QUERY(nvmlDeviceGetBrand, unsigned int, g->brand)
DEVICE_QUERY(nvmlDeviceGetArchitecture, unsigned int, g->arch)

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length) {
    pthread_mutex_lock(&lock);
    SESSION();
    nvmlDevice_t d = device_of(device);
    if (d == NULL) RETURN(NVML_ERROR_INVALID_ARGUMENT);
    RETURN(copy_string(uuid, length, d->gi < 0 ? gpus[d->gpu].uuid : ci_of(d->gpu, d->gi, d->ci)->uuid));
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length) {
    pthread_mutex_lock(&lock);
    SESSION();
    nvmlDevice_t d = device_of(device);
    if (d == NULL) RETURN(NVML_ERROR_INVALID_ARGUMENT);
    char text[200];
    if (d->gi < 0) snprintf(text, sizeof text, "%s", gpus[d->gpu].name);
    else snprintf(text, sizeof text, "%s MIG %s", gpus[d->gpu].name, gi_of(d->gpu, d->gi)->profile->name);
    RETURN(copy_string(name, length, text));
}

nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int *major, int *minor) {
    pthread_mutex_lock(&lock);
    SESSION();
    struct gpu *g = full_gpu(device);
    if (g == NULL || !valid_pointer(major, sizeof *major, _Alignof(int)) ||
        !valid_pointer(minor, sizeof *minor, _Alignof(int)))
        RETURN(NVML_ERROR_INVALID_ARGUMENT);
    *major = g->cc_major;
    *minor = g->cc_minor;
    RETURN(NVML_SUCCESS);
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory) {
    pthread_mutex_lock(&lock);
    SESSION();
    struct gpu *g = full_gpu(device);
    if (g == NULL || !valid_pointer(memory, sizeof *memory, _Alignof(nvmlMemory_t)))
        RETURN(NVML_ERROR_INVALID_ARGUMENT);
    if (!g->has_memory) RETURN(NVML_ERROR_NOT_SUPPORTED);
    memory->total = g->memory;
    memory->free = g->memory;
    memory->used = 0;
    RETURN(NVML_SUCCESS);
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t *pci) {
    pthread_mutex_lock(&lock);
    SESSION();
    struct gpu *g = full_gpu(device);
    if (g == NULL || !valid_pointer(pci, sizeof *pci, _Alignof(nvmlPciInfo_t))) RETURN(NVML_ERROR_INVALID_ARGUMENT);
    memset(pci, 0, sizeof *pci);
    snprintf(pci->busId, sizeof pci->busId, "%s", g->bus);
    snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "%.12s", g->bus + (strlen(g->bus) > 12 ? 4 : 0));
    sscanf(g->bus, "%x:%x:%x", &pci->domain, &pci->bus, &pci->device);
    pci->pciDeviceId = 0x20b010de;
    RETURN(NVML_SUCCESS);
}

nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int *current, unsigned int *pending) {
    pthread_mutex_lock(&lock);
    SESSION();
    struct gpu *g = full_gpu(device);
    if (g == NULL || !valid_pointer(current, sizeof *current, _Alignof(unsigned int)) ||
        !valid_pointer(pending, sizeof *pending, _Alignof(unsigned int)))
        RETURN(NVML_ERROR_INVALID_ARGUMENT);
    if (g->mig < 0) RETURN(NVML_ERROR_NOT_SUPPORTED);
    *current = *pending = (unsigned int)g->mig;
    RETURN(NVML_SUCCESS);
}

/* ------------------------------------------------------------------------------------------ MIG: GPU instances */

static nvmlReturn_t gpu_profile(nvmlDevice_t device, unsigned int index, const struct profile **out) {
    struct gpu *g = full_gpu(device);
    if (g == NULL || index >= GPU_INSTANCE_PROFILE_COUNT) return NVML_ERROR_INVALID_ARGUMENT;
    if (g->mig != 1) return NVML_ERROR_NOT_SUPPORTED;
    *out = profile_by_index(g, index);
    return *out ? NVML_SUCCESS : NVML_ERROR_NOT_SUPPORTED;
}

nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfo(nvmlDevice_t device, unsigned int index,
                                                 nvmlGpuInstanceProfileInfo_t *info) {
    pthread_mutex_lock(&lock);
    SESSION();
    const struct profile *p = NULL;
    if (!valid_pointer(info, sizeof *info, _Alignof(nvmlGpuInstanceProfileInfo_t)))
        RETURN(NVML_ERROR_INVALID_ARGUMENT);
    nvmlReturn_t r = gpu_profile(device, index, &p);
    if (r != NVML_SUCCESS) RETURN(r);
    *info = (nvmlGpuInstanceProfileInfo_t){p->id, 0, p->slices, p->instances, p->sms, p->ce, p->dec, p->enc,
                                           p->jpeg, p->ofa, p->mib};
    RETURN(NVML_SUCCESS);
}

nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfoV(nvmlDevice_t device, unsigned int index,
                                                  nvmlGpuInstanceProfileInfo_v2_t *info) {
    pthread_mutex_lock(&lock);
    SESSION();
    const struct profile *p = NULL;
    if (!valid_pointer(info, sizeof *info, _Alignof(nvmlGpuInstanceProfileInfo_v2_t)) ||
        info->version != STRUCT_VERSION(nvmlGpuInstanceProfileInfo_v2_t, 2))
        RETURN(NVML_ERROR_INVALID_ARGUMENT);
    nvmlReturn_t r = gpu_profile(device, index, &p);
    if (r != NVML_SUCCESS) RETURN(r);
    info->id = p->id;
    info->isP2pSupported = 0;
    info->sliceCount = p->slices;
    info->instanceCount = p->instances;
    info->multiprocessorCount = p->sms;
    info->copyEngineCount = p->ce;
    info->decoderCount = p->dec;
    info->encoderCount = p->enc;
    info->jpegCount = p->jpeg;
    info->ofaCount = p->ofa;
    info->memorySizeMB = p->mib;
    snprintf(info->name, sizeof info->name, "MIG %s", p->name);
    RETURN(NVML_SUCCESS);
}

nvmlReturn_t nvmlDeviceGetGpuInstancePossiblePlacements_v2(nvmlDevice_t device, unsigned int profile_id,
                                                           nvmlGpuInstancePlacement_t *placements,
                                                           unsigned int *count) {
    pthread_mutex_lock(&lock);
    SESSION();
    struct gpu *g = full_gpu(device);
    if (g == NULL || !valid_pointer(count, sizeof *count, _Alignof(unsigned int))) RETURN(NVML_ERROR_INVALID_ARGUMENT);
    if (g->mig < 0) RETURN(NVML_ERROR_NOT_SUPPORTED);
    const struct profile *p = profile_by_id(g, profile_id);
    if (p == NULL) RETURN(NVML_ERROR_NOT_SUPPORTED);
    if (placements == NULL) {
        *count = p->nplacements;
        RETURN(NVML_SUCCESS);
    }
    if (*count < p->nplacements) RETURN(NVML_ERROR_INSUFFICIENT_SIZE);
    if (!valid_pointer(placements, sizeof *placements * p->nplacements, _Alignof(nvmlGpuInstancePlacement_t)))
        RETURN(NVML_ERROR_INVALID_ARGUMENT);
    for (unsigned int i = 0; i < p->nplacements; i++)
        placements[i] = (nvmlGpuInstancePlacement_t){p->placements[i][0], p->placements[i][1]};
    *count = p->nplacements;
    RETURN(NVML_SUCCESS);
}

nvmlReturn_t nvmlDeviceCreateGpuInstanceWithPlacement(nvmlDevice_t device, unsigned int profile_id,
                                                      const nvmlGpuInstancePlacement_t *placement,
                                                      nvmlGpuInstance_t *instance) {
    pthread_mutex_lock(&lock);
    SESSION();
    struct gpu *g = full_gpu(device);
    if (g == NULL || !valid_pointer(placement, sizeof *placement, _Alignof(nvmlGpuInstancePlacement_t)) ||
        !valid_pointer(instance, sizeof *instance, _Alignof(nvmlGpuInstance_t)))
        RETURN(NVML_ERROR_INVALID_ARGUMENT);
    if (g->mig != 1) RETURN(NVML_ERROR_NOT_SUPPORTED);
    const struct profile *p = profile_by_id(g, profile_id);
    if (p == NULL) RETURN(NVML_ERROR_INVALID_ARGUMENT);
    int possible = 0;
    for (unsigned int i = 0; i < p->nplacements; i++)
        possible |= p->placements[i][0] == placement->start && p->placements[i][1] == placement->size;
    if (!possible) RETURN(NVML_ERROR_INVALID_ARGUMENT);
    unsigned int same = 0;
    int free_id = -1;
    for (int id = 0; id < MAX_GIS; id++) {
        const struct gi *gi = &g->gis[id];
        if (!gi->used) {
            if (free_id < 0 && id > 0) free_id = id;
            continue;
        }
        same += gi->profile == p;
        if (gi->start < placement->start + placement->size && placement->start < gi->start + gi->size)
            RETURN(NVML_ERROR_INSUFFICIENT_RESOURCES);
    }
    if (same >= p->instances || free_id < 0) RETURN(NVML_ERROR_INSUFFICIENT_RESOURCES);
    struct gi *gi = &g->gis[free_id];
    memset(gi, 0, sizeof *gi);
    gi->used = 1;
    gi->profile = p;
    gi->start = placement->start;
    gi->size = placement->size;
    *instance = &gi_handles[g - gpus][free_id];
    write_cap(g, free_id, -1);
    log_call("nvmlDeviceCreateGpuInstanceWithPlacement %s profile=%u start=%u size=%u gi=%d", g->uuid, p->id,
             placement->start, placement->size, free_id);
    save_state();
    RETURN(NVML_SUCCESS);
}

nvmlReturn_t nvmlDeviceGetGpuInstanceById(nvmlDevice_t device, unsigned int id, nvmlGpuInstance_t *instance) {
    pthread_mutex_lock(&lock);
    SESSION();
    struct gpu *g = full_gpu(device);
    if (g == NULL || id >= MAX_GIS || !valid_pointer(instance, sizeof *instance, _Alignof(nvmlGpuInstance_t)))
        RETURN(NVML_ERROR_INVALID_ARGUMENT);
    if (g->mig != 1) RETURN(NVML_ERROR_NOT_SUPPORTED);
    int index = (int)(g - gpus);
    if (gi_of(index, (int)id) == NULL) RETURN(NVML_ERROR_NOT_FOUND);
    *instance = &gi_handles[index][id];
    RETURN(NVML_SUCCESS);
}

nvmlReturn_t nvmlGpuInstanceGetInfo(nvmlGpuInstance_t instance, nvmlGpuInstanceInfo_t *info) {
    pthread_mutex_lock(&lock);
    SESSION();
    if (live_gi(instance) == NULL || !valid_pointer(info, sizeof *info, _Alignof(nvmlGpuInstanceInfo_t)))
        RETURN(NVML_ERROR_INVALID_ARGUMENT);
    const struct gi *gi = gi_of(instance->gpu, instance->id);
    info->device = &gpu_handles[instance->gpu];
    info->id = (unsigned int)instance->id;
    info->profileId = gi->profile->id;
    info->placement = (nvmlGpuInstancePlacement_t){gi->start, gi->size};
    RETURN(NVML_SUCCESS);
}

nvmlReturn_t nvmlGpuInstanceDestroy(nvmlGpuInstance_t instance) {
    pthread_mutex_lock(&lock);
    SESSION();
    if (live_gi(instance) == NULL) RETURN(NVML_ERROR_INVALID_ARGUMENT);
    struct gi *gi = gi_of(instance->gpu, instance->id);
    for (int c = 0; c < MAX_CIS; c++)
        if (gi->cis[c].used) RETURN(NVML_ERROR_IN_USE);
    gi->used = 0;
    remove_cap(&gpus[instance->gpu], instance->id, -1);
    log_call("nvmlGpuInstanceDestroy %s gi=%d", gpus[instance->gpu].uuid, instance->id);
    save_state();
    RETURN(NVML_SUCCESS);
}

/* ------------------------------------------------------------------------------------------ MIG: compute instances */

static int ci_offered(const struct gi *gi, unsigned int index) {
    unsigned int c = index < COMPUTE_INSTANCE_PROFILE_COUNT ? CI_SLICES[index] : 0, g = gi->profile->slices;
    /* a compute instance spans the whole GPU instance or at most about half of it (go-nvlib's rule) */
    return c != 0 && (c == g || (c < g && c * 2 <= g + 1));
}

static nvmlReturn_t ci_profile(nvmlGpuInstance_t instance, unsigned int index, unsigned int engine,
                               const struct gi **out) {
    if (live_gi(instance) == NULL || index >= COMPUTE_INSTANCE_PROFILE_COUNT || engine != 0)
        return NVML_ERROR_INVALID_ARGUMENT;
    *out = gi_of(instance->gpu, instance->id);
    return ci_offered(*out, index) ? NVML_SUCCESS : NVML_ERROR_NOT_SUPPORTED;
}

nvmlReturn_t nvmlGpuInstanceGetComputeInstanceProfileInfo(nvmlGpuInstance_t instance, unsigned int index,
                                                          unsigned int engine,
                                                          nvmlComputeInstanceProfileInfo_t *info) {
    pthread_mutex_lock(&lock);
    SESSION();
    const struct gi *gi = NULL;
    if (!valid_pointer(info, sizeof *info, _Alignof(nvmlComputeInstanceProfileInfo_t)))
        RETURN(NVML_ERROR_INVALID_ARGUMENT);
    nvmlReturn_t r = ci_profile(instance, index, engine, &gi);
    if (r != NVML_SUCCESS) RETURN(r);
    const struct profile *p = gi->profile;
    unsigned int c = CI_SLICES[index];
    *info = (nvmlComputeInstanceProfileInfo_t){index, c, p->slices / c, p->sms * c / p->slices, p->ce, p->dec,
                                               p->enc, p->jpeg, p->ofa};
    RETURN(NVML_SUCCESS);
}

nvmlReturn_t nvmlGpuInstanceGetComputeInstanceProfileInfoV(nvmlGpuInstance_t instance, unsigned int index,
                                                           unsigned int engine,
                                                           nvmlComputeInstanceProfileInfo_v2_t *info) {
    pthread_mutex_lock(&lock);
    SESSION();
    const struct gi *gi = NULL;
    if (!valid_pointer(info, sizeof *info, _Alignof(nvmlComputeInstanceProfileInfo_v2_t)) ||
        info->version != STRUCT_VERSION(nvmlComputeInstanceProfileInfo_v2_t, 2))
        RETURN(NVML_ERROR_INVALID_ARGUMENT);
    nvmlReturn_t r = ci_profile(instance, index, engine, &gi);
    if (r != NVML_SUCCESS) RETURN(r);
    const struct profile *p = gi->profile;
    unsigned int c = CI_SLICES[index];
    info->id = index;
    info->sliceCount = c;
    info->instanceCount = p->slices / c;
    info->multiprocessorCount = p->sms * c / p->slices;
    info->sharedCopyEngineCount = p->ce;
    info->sharedDecoderCount = p->dec;
    info->sharedEncoderCount = p->enc;
    info->sharedJpegCount = p->jpeg;
    info->sharedOfaCount = p->ofa;
    if (c == p->slices) snprintf(info->name, sizeof info->name, "MIG %s", p->name);
    else snprintf(info->name, sizeof info->name, "MIG %uc.%s", c, p->name);
    RETURN(NVML_SUCCESS);
}

nvmlReturn_t nvmlGpuInstanceCreateComputeInstance(nvmlGpuInstance_t instance, unsigned int index,
                                                  nvmlComputeInstance_t *out) {
    pthread_mutex_lock(&lock);
    SESSION();
    if (live_gi(instance) == NULL || index >= COMPUTE_INSTANCE_PROFILE_COUNT ||
        !valid_pointer(out, sizeof *out, _Alignof(nvmlComputeInstance_t)))
        RETURN(NVML_ERROR_INVALID_ARGUMENT);
    struct gi *gi = gi_of(instance->gpu, instance->id);
    if (!ci_offered(gi, index)) RETURN(NVML_ERROR_NOT_SUPPORTED);
    unsigned int used = 0;
    int free_id = -1;
    for (int c = 0; c < MAX_CIS; c++) {
        if (gi->cis[c].used) used += gi->cis[c].size;
        else if (free_id < 0) free_id = c;
    }
    if (free_id < 0 || used + CI_SLICES[index] > gi->profile->slices) RETURN(NVML_ERROR_INSUFFICIENT_RESOURCES);
    struct ci *ci = &gi->cis[free_id];
    static unsigned long long created;
    *ci = (struct ci){1, index, used, CI_SLICES[index], ""};
    mig_uuid(&gpus[instance->gpu], instance->id, free_id, ++created ^ (unsigned long long)time(NULL) << 20,
             ci->uuid, sizeof ci->uuid);
    *out = &ci_handles[instance->gpu][instance->id][free_id];
    write_cap(&gpus[instance->gpu], instance->id, free_id);
    log_call("nvmlGpuInstanceCreateComputeInstance %s gi=%d profile=%u ci=%d", gpus[instance->gpu].uuid,
             instance->id, index, free_id);
    save_state();
    RETURN(NVML_SUCCESS);
}

nvmlReturn_t nvmlGpuInstanceGetComputeInstanceById(nvmlGpuInstance_t instance, unsigned int id,
                                                   nvmlComputeInstance_t *out) {
    pthread_mutex_lock(&lock);
    SESSION();
    if (live_gi(instance) == NULL || id >= MAX_CIS || !valid_pointer(out, sizeof *out, _Alignof(nvmlComputeInstance_t)))
        RETURN(NVML_ERROR_INVALID_ARGUMENT);
    if (ci_of(instance->gpu, instance->id, (int)id) == NULL) RETURN(NVML_ERROR_NOT_FOUND);
    *out = &ci_handles[instance->gpu][instance->id][id];
    RETURN(NVML_SUCCESS);
}

nvmlReturn_t nvmlComputeInstanceGetInfo_v2(nvmlComputeInstance_t instance, nvmlComputeInstanceInfo_t *info) {
    pthread_mutex_lock(&lock);
    SESSION();
    if (live_ci(instance) == NULL || !valid_pointer(info, sizeof *info, _Alignof(nvmlComputeInstanceInfo_t)))
        RETURN(NVML_ERROR_INVALID_ARGUMENT);
    const struct ci *ci = ci_of(instance->gpu, instance->gi, instance->id);
    info->device = &gpu_handles[instance->gpu];
    info->gpuInstance = &gi_handles[instance->gpu][instance->gi];
    info->id = (unsigned int)instance->id;
    info->profileId = ci->profile;
    info->placement.start = ci->start;
    info->placement.size = ci->size;
    RETURN(NVML_SUCCESS);
}

nvmlReturn_t nvmlComputeInstanceDestroy(nvmlComputeInstance_t instance) {
    pthread_mutex_lock(&lock);
    SESSION();
    if (live_ci(instance) == NULL) RETURN(NVML_ERROR_INVALID_ARGUMENT);
    gi_of(instance->gpu, instance->gi)->cis[instance->id].used = 0;
    remove_cap(&gpus[instance->gpu], instance->gi, instance->id);
    log_call("nvmlComputeInstanceDestroy %s gi=%d ci=%d", gpus[instance->gpu].uuid, instance->gi, instance->id);
    save_state();
    RETURN(NVML_SUCCESS);
}

/* ------------------------------------------------------------------------------------------ MIG devices */

nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned int *count) {
    pthread_mutex_lock(&lock);
    SESSION();
    struct gpu *g = full_gpu(device);
    if (g == NULL || !valid_pointer(count, sizeof *count, _Alignof(unsigned int))) RETURN(NVML_ERROR_INVALID_ARGUMENT);
    *count = g->model != NULL && g->mig >= 0 ? 7 : 0;
    RETURN(NVML_SUCCESS);
}

nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device, unsigned int index, nvmlDevice_t *out) {
    pthread_mutex_lock(&lock);
    SESSION();
    struct gpu *g = full_gpu(device);
    if (g == NULL || index >= 7 || !valid_pointer(out, sizeof *out, _Alignof(nvmlDevice_t)))
        RETURN(NVML_ERROR_INVALID_ARGUMENT);
    if (g->mig != 1) RETURN(NVML_ERROR_NOT_SUPPORTED);
    unsigned int seen = 0;
    int gpu = (int)(g - gpus);
    for (int gi = 0; gi < MAX_GIS; gi++)
        for (int ci = 0; ci < MAX_CIS; ci++) {
            if (ci_of(gpu, gi, ci) == NULL) continue;
            if (seen++ == index) {
                *out = &mig_handles[gpu][gi][ci];
                RETURN(NVML_SUCCESS);
            }
        }
    RETURN(NVML_ERROR_NOT_FOUND);
}

static nvmlReturn_t mig_query(nvmlDevice_t device, unsigned int *id, int which) {
    nvmlDevice_t d = device_of(device);
    if (d == NULL || !valid_pointer(id, sizeof *id, _Alignof(unsigned int))) return NVML_ERROR_INVALID_ARGUMENT;
    if (d->gi < 0) return NVML_ERROR_NOT_SUPPORTED;
    *id = (unsigned int)(which ? d->ci : d->gi);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device, unsigned int *id) {
    pthread_mutex_lock(&lock);
    SESSION();
    RETURN(mig_query(device, id, 0));
}

nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t device, unsigned int *id) {
    pthread_mutex_lock(&lock);
    SESSION();
    RETURN(mig_query(device, id, 1));
}

/* ------------------------------------------------------------------------------------------ events */

static struct nvmlEventSet_st *live_set(nvmlEventSet_t set) {
    int i = handle_index(set, event_sets, sizeof event_sets[0], MAX_EVENT_SETS);
    return i >= 0 && event_sets[i].used ? set : NULL;
}

nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t *set) {
    pthread_mutex_lock(&lock);
    SESSION();
    if (!valid_pointer(set, sizeof *set, _Alignof(nvmlEventSet_t))) RETURN(NVML_ERROR_INVALID_ARGUMENT);
    for (int i = 0; i < MAX_EVENT_SETS; i++)
        if (!event_sets[i].used) {
            memset(&event_sets[i], 0, sizeof event_sets[i]);
            event_sets[i].used = 1;
            *set = &event_sets[i];
            RETURN(NVML_SUCCESS);
        }
    RETURN(NVML_ERROR_MEMORY);
}

nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device, unsigned long long types, nvmlEventSet_t set) {
    pthread_mutex_lock(&lock);
    SESSION();
    struct gpu *g = full_gpu(device);
    if (g == NULL || live_set(set) == NULL || types == 0) RETURN(NVML_ERROR_INVALID_ARGUMENT);
    if (!g->events || (types & ~SUPPORTED_EVENTS) != 0) RETURN(NVML_ERROR_NOT_SUPPORTED);
    set->mask[g - gpus] |= types;
    RETURN(NVML_SUCCESS);
}

nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t *data, unsigned int timeout_ms) {
    pthread_mutex_lock(&lock);
    SESSION();
    if (live_set(set) == NULL || !valid_pointer(data, sizeof *data, _Alignof(nvmlEventData_t)))
        RETURN(NVML_ERROR_INVALID_ARGUMENT);
    waits++;
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += timeout_ms / 1000;
    deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (deadline.tv_nsec >= 1000000000L) deadline.tv_sec++, deadline.tv_nsec -= 1000000000L;
    while (refcount > 0 && set->used && set->count == 0)
        if (pthread_cond_timedwait(&arrived, &lock, &deadline) == ETIMEDOUT) break;
    if (refcount == 0 || !set->used) RETURN(NVML_ERROR_UNINITIALIZED);
    if (set->count == 0) RETURN(NVML_ERROR_TIMEOUT);
    struct event e = set->queue[set->head];
    set->head = (set->head + 1) % MAX_QUEUED;
    set->count--;
    *data = (nvmlEventData_t){&gpu_handles[e.gpu], e.type, e.data, e.gi, e.ci};
    RETURN(NVML_SUCCESS);
}

nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set) {
    pthread_mutex_lock(&lock);
    SESSION();
    if (live_set(set) == NULL) RETURN(NVML_ERROR_INVALID_ARGUMENT);
    set->used = 0;
    pthread_cond_broadcast(&arrived);
    RETURN(NVML_SUCCESS);
}

/* ------------------------------------------------------------------------------------------ test controls */

/* An XID as the GPU raises it, delivered to every event set that registered XIDs on the GPU; the number of sets
 * reached, or -1 for an unknown GPU or no session. */
int kubedraStubInjectXid(const char *uuid, unsigned long long xid, unsigned int gi, unsigned int ci) {
    pthread_mutex_lock(&lock);
    int reached = -1;
    for (int i = 0; i < gpu_count && refcount > 0; i++) {
        if (strcmp(gpus[i].uuid, uuid) != 0) continue;
        reached = 0;
        for (int s = 0; s < MAX_EVENT_SETS; s++) {
            struct nvmlEventSet_st *set = &event_sets[s];
            if (!set->used || !(set->mask[i] & XID_CRITICAL_ERROR) || set->count == MAX_QUEUED) continue;
            set->queue[(set->head + set->count) % MAX_QUEUED] = (struct event){i, XID_CRITICAL_ERROR, xid, gi, ci};
            set->count++;
            reached++;
        }
    }
    pthread_cond_broadcast(&arrived);
    pthread_mutex_unlock(&lock);
    return reached;
}

/* The event types registered on a GPU over every live event set. */
unsigned long long kubedraStubRegistered(const char *uuid) {
    pthread_mutex_lock(&lock);
    unsigned long long mask = 0;
    for (int i = 0; i < gpu_count; i++)
        if (strcmp(gpus[i].uuid, uuid) == 0)
            for (int s = 0; s < MAX_EVENT_SETS; s++)
                if (event_sets[s].used) mask |= event_sets[s].mask[i];
    pthread_mutex_unlock(&lock);
    return mask;
}

int kubedraStubEventSets(void) {
    pthread_mutex_lock(&lock);
    int live = 0;
    for (int s = 0; s < MAX_EVENT_SETS; s++) live += event_sets[s].used;
    pthread_mutex_unlock(&lock);
    return live;
}

/* Sessions open now, nvmlInit and nvmlShutdown calls so far, nvmlEventSetWait calls so far. */
int kubedraStubRefcount(void) { return refcount; }
unsigned int kubedraStubInits(void) { return inits; }
unsigned int kubedraStubShutdowns(void) { return shutdowns; }
unsigned int kubedraStubWaits(void) { return waits; }

/* Between tests: every session closed, counters at zero (a test that failed mid-session leaks nothing). */
void kubedraStubReset(void) {
    pthread_mutex_lock(&lock);
    refcount = 0;
    gpu_count = 0;
    inits = shutdowns = waits = 0;
    memset(event_sets, 0, sizeof event_sets);
    pthread_cond_broadcast(&arrived);
    pthread_mutex_unlock(&lock);
}
