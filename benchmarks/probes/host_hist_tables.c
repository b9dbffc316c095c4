/* One-thread float64 histogram kernels, fused estimate + count with 1, 2, 4 or 8 count tables (lane q of a
 * group counts into table q % S), AVX-512 and AVX2, against a fast-histogram-like scalar loop.
 *   gcc -O3 -std=c11 -ffp-contract=off benchmarks/probes/host_hist_tables.c -o /tmp/t && /tmp/t N BINS MODE
 * MODE 0 uniform, 1 one value, 2 sorted.  Results: benchmarks/results/host_hist_sub_H200_r237.txt. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <immintrin.h>
typedef struct { double lo, stop, scale, margin; int64_t nbins; } B;
static double now(){ struct timespec t; clock_gettime(CLOCK_MONOTONIC,&t); return t.tv_sec+1e-9*t.tv_nsec; }
static int64_t slow(const B*b,double v){ if(!(v>=b->lo&&v<=b->stop)) return -1; int64_t k=(int64_t)((v-b->lo)*b->scale); return k>=b->nbins?b->nbins-1:k; }
#define NT 8
static uint64_t T[NT][4096];
/* S tables: lane q of a group goes to table q % S */
#define F512(NAME,S) __attribute__((target("avx512f,avx512vl"))) static void NAME(const double*restrict p,int64_t n,const B*b,uint64_t*restrict h){ \
  const __m512d lo=_mm512_set1_pd(b->lo), stop=_mm512_set1_pd(b->stop), scale=_mm512_set1_pd(b->scale), nb=_mm512_set1_pd((double)b->nbins); \
  const __m512d m0=_mm512_set1_pd(b->margin), m1=_mm512_set1_pd(1.0-b->margin); \
  for(int t=0;t<S;t++) memset(T[t],0,b->nbins*8); \
  int64_t j=0; int32_t ks[8]; \
  for(;j+8<=n;j+=8){ const __m512d v=_mm512_loadu_pd(p+j); \
    const __mmask8 in=_mm512_cmp_pd_mask(v,lo,_CMP_GE_OQ)&_mm512_cmp_pd_mask(v,stop,_CMP_LE_OQ); \
    const __m512d f=_mm512_maskz_mov_pd(in,_mm512_mul_pd(_mm512_sub_pd(v,lo),scale)); \
    const __m256i k=_mm512_cvttpd_epi32(f); const __m512d fr=_mm512_sub_pd(f,_mm512_cvtepi32_pd(k)); \
    const __mmask8 fast=_mm512_cmp_pd_mask(fr,m0,_CMP_GT_OQ)&_mm512_cmp_pd_mask(fr,m1,_CMP_LT_OQ)&_mm512_cmp_pd_mask(f,nb,_CMP_LT_OQ); \
    _mm256_storeu_si256((__m256i*)ks,k); \
    if((in&fast)==255){ for(int q=0;q<8;q++) T[q%S][ks[q]]++; } \
    else for(int q=0;q<8;q++){ int64_t kk=slow(b,p[j+q]); if(kk>=0) h[kk]++; } } \
  for(;j<n;j++){ int64_t kk=slow(b,p[j]); if(kk>=0) h[kk]++; } \
  for(int t=0;t<S;t++) for(int64_t k=0;k<b->nbins;k++) h[k]+=T[t][k]; }
F512(f512_1,1) F512(f512_2,2) F512(f512_4,4) F512(f512_8,8)
#define F256(NAME,S) __attribute__((target("avx2"))) static void NAME(const double*restrict p,int64_t n,const B*b,uint64_t*restrict h){ \
  const __m256d lo=_mm256_set1_pd(b->lo), stop=_mm256_set1_pd(b->stop), scale=_mm256_set1_pd(b->scale), nb=_mm256_set1_pd((double)b->nbins); \
  const __m256d m0=_mm256_set1_pd(b->margin), m1=_mm256_set1_pd(1.0-b->margin); \
  for(int t=0;t<S;t++) memset(T[t],0,b->nbins*8); \
  int64_t j=0; int32_t ks[4]; \
  for(;j+4<=n;j+=4){ __m256d v=_mm256_loadu_pd(p+j); \
    __m256d in=_mm256_and_pd(_mm256_cmp_pd(v,lo,_CMP_GE_OQ),_mm256_cmp_pd(v,stop,_CMP_LE_OQ)); \
    __m256d f=_mm256_and_pd(in,_mm256_mul_pd(_mm256_sub_pd(v,lo),scale)); \
    __m128i k=_mm256_cvttpd_epi32(f); __m256d fr=_mm256_sub_pd(f,_mm256_cvtepi32_pd(k)); \
    __m256d fast=_mm256_and_pd(_mm256_and_pd(_mm256_cmp_pd(fr,m0,_CMP_GT_OQ),_mm256_cmp_pd(fr,m1,_CMP_LT_OQ)),_mm256_cmp_pd(f,nb,_CMP_LT_OQ)); \
    _mm_storeu_si128((__m128i*)ks,k); \
    if(_mm256_movemask_pd(_mm256_and_pd(fast,in))==15){ for(int q=0;q<4;q++) T[q%S][ks[q]]++; } \
    else for(int q=0;q<4;q++){ int64_t kk=slow(b,p[j+q]); if(kk>=0) h[kk]++; } } \
  for(;j<n;j++){ int64_t kk=slow(b,p[j]); if(kk>=0) h[kk]++; } \
  for(int t=0;t<S;t++) for(int64_t k=0;k<b->nbins;k++) h[k]+=T[t][k]; }
F256(f256_1,1) F256(f256_2,2) F256(f256_4,4)
static void fhlike(const double*restrict p,int64_t n,const B*b,uint64_t*restrict h){
  for(int64_t j=0;j<n;j++){ double v=p[j]; if(v>=b->lo&&v<b->stop){ int64_t k=(int64_t)((v-b->lo)*b->scale); h[k]++; } } }
int main(int argc,char**argv){
  int64_t n=atoll(argv[1]); int nb=atoi(argv[2]); int mode=atoi(argv[3]);
  double*p=malloc(n*8); srand(1); for(int64_t i=0;i<n;i++) p[i]= mode==0? rand()/(double)RAND_MAX : mode==1? 0.505 : (double)i/n;
  B b={0,1,nb,1e-9,nb}; uint64_t*h=calloc(nb,8);
  struct{const char*nm; void(*f)(const double*restrict,int64_t,const B*,uint64_t*restrict);} v[]={
    {"avx512 1 table",f512_1},{"avx512 2 tables",f512_2},{"avx512 4 tables",f512_4},{"avx512 8 tables",f512_8},
    {"avx2 1 table",f256_1},{"avx2 2 tables",f256_2},{"avx2 4 tables",f256_4},{"scalar (fast-histogram-like)",fhlike}};
  int has512=__builtin_cpu_supports("avx512f");
  printf("n=%lld bins=%d mode=%s\n",(long long)n,nb,mode==0?"uniform":mode==1?"one value":"sorted");
  for(int r=0;r<2;r++) for(unsigned q=0;q<sizeof v/sizeof*v;q++){ if(!has512&&q<4) continue; double best=1e9; uint64_t tot=0;
    for(int it=0;it<7;it++){ memset(h,0,nb*8); double t=now(); v[q].f(p,n,&b,h); t=now()-t; if(t<best)best=t; }
    for(int k=0;k<nb;k++) tot+=h[k];
    if(r) printf("  %-30s %.3f ns/el  (count %llu)\n",v[q].nm,best*1e9/n,(unsigned long long)tot); }
}
